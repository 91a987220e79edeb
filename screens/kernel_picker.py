"""The kernel picker (ctrl+k on a chain's Dimensions, Tiles and Loops steps): a filter and the kernels.

A whole model is dozens of kernels; the user finds one by what it runs (`conv`) or where it sits in
the model (`layer1.0`), so the filter narrows the list by a substring of either, and each row shows
the kernel's submodule path. Moving the highlight only moves it (the row's details are the stage's
own fields, nothing is computed); Enter or a click dismisses with the kernel's index and the step
then shows that kernel from the per-kernel pipelines the design keeps (design.module_stages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from pypto_tui.contract.submodule import FORWARD, kernel_matches
from pypto_tui.screens.widgets import Field


@dataclass(frozen=True)
class KernelRow:
    """What the picker shows of one kernel (the fields a `design.Stage` already holds)."""

    index: int
    ops: str
    pattern: str
    submodule: str
    rule: str = ""

    @classmethod
    def of(cls, stage: Any) -> KernelRow:
        return cls(stage.index, stage.ops, stage.kernel.pattern, stage.submodule, stage.rule)

    @property
    def where(self) -> str:
        return self.submodule or FORWARD


class KernelPickerDialog(ModalScreen[int | None]):
    """Type to filter (operators or submodule path), ↑/↓ to move, Enter to pick, Esc to keep the kernel."""

    CSS_PATH = "kernel_picker.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "move(1)", "Down", show=False),
        Binding("up", "move(-1)", "Up", show=False),
        Binding("pagedown", "move(10)", "Page down", show=False),
        Binding("pageup", "move(-10)", "Page up", show=False),
    ]

    def __init__(self, rows: Sequence[KernelRow], current: int) -> None:
        super().__init__(classes="dialog-screen")
        self.rows = tuple(rows)
        self.current = current
        self.shown: tuple[KernelRow, ...] = ()
        width = max((len(r.where) for r in self.rows), default=len(FORWARD))
        self._where_width = min(max(width, len(FORWARD)), 32)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="kernel-pick"):
            yield Label(f"Pick a kernel ({len(self.rows)} in this module)", classes="dialog-title")
            yield Field("", id="kernel-filter", select_on_focus=False,
                        placeholder="filter: an operator or a submodule path (e.g. conv, layer1.0)")
            yield OptionList(id="kernel-list")
            yield Static("", id="kernel-pick-detail")
            yield Static("", id="kernel-pick-count")

    def on_mount(self) -> None:
        self._fill("")
        self.query_one("#kernel-filter", Input).focus()

    # ------------------------------------------------------------------ the list
    def _prompt(self, row: KernelRow) -> Text:
        where = row.where
        if len(where) > self._where_width:
            where = "…" + where[-(self._where_width - 1):]
        text = Text()
        text.append(f"k{row.index:<4}", style="bold" if row.index == self.current else "")
        text.append(f"{where:<{self._where_width}}  ", style="dim" if not row.submodule else "cyan")
        text.append(row.ops)
        text.append(f"  ({row.pattern})", style="dim")
        return text

    def _fill(self, text: str) -> None:
        """The kernels the filter keeps; the highlight stays on the kernel it was on when it still shows."""
        options = self.query_one("#kernel-list", OptionList)
        before = self.highlighted()
        keep = before.index if before is not None else self.current
        self.shown = tuple(r for r in self.rows if kernel_matches(text, r.ops, r.submodule))
        options.clear_options()
        options.add_options([Option(self._prompt(r), id=str(r.index)) for r in self.shown])
        if self.shown:
            at = next((i for i, r in enumerate(self.shown) if r.index == keep), 0)
            options.highlighted = at
        what = f"'{text.strip()}'" if text.strip() else ""
        count = (f"{len(self.shown)} of {len(self.rows)} kernels match {what}" if what
                 else f"{len(self.rows)} kernels")
        self.query_one("#kernel-pick-count", Static).update(f"{count} · ↑/↓ move · enter picks · esc keeps kernel "
                                                            f"{self.current}")
        self._detail()

    def highlighted(self) -> KernelRow | None:
        try:
            at = self.query_one("#kernel-list", OptionList).highlighted
        except Exception:
            return None
        return self.shown[at] if at is not None and 0 <= at < len(self.shown) else None

    def _detail(self) -> None:
        row = self.highlighted()
        detail = self.query_one("#kernel-pick-detail", Static)
        if row is None:
            detail.update("")
            return
        where = f"in {row.submodule}" if row.submodule else "in Model.forward"
        detail.update(Text(f"kernel {row.index}: {row.ops} ({row.pattern}) {where}; "
                           f"{row.rule or 'its own kernel'}", overflow="ellipsis", no_wrap=True))

    # ------------------------------------------------------------------ events
    @on(Input.Changed, "#kernel-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    @on(Input.Submitted, "#kernel-filter")
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        row = self.highlighted()
        if row is not None:
            self.dismiss(row.index)

    @on(OptionList.OptionHighlighted, "#kernel-list")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self._detail()

    @on(OptionList.OptionSelected, "#kernel-list")
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.dismiss(int(event.option.id))

    def action_move(self, step: int) -> None:
        """Move the highlight from the filter (the list need not have the focus)."""
        if not self.shown:
            return
        options = self.query_one("#kernel-list", OptionList)
        at = options.highlighted if options.highlighted is not None else 0
        options.highlighted = max(0, min(len(self.shown) - 1, at + step))

    def action_cancel(self) -> None:
        self.dismiss(None)
