"""Modal dialogs: confirm, ask for a path, open a task (or a bundled example), restore a crash.

Each is a `ModalScreen[T]` that dismisses with its answer; the caller decides what to do with
it. A path dialog checks what it can in place (empty, a folder where a file is wanted) and
shows the problem under the field instead of closing.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from pypto_tui.design import Design
from pypto_tui.screens.widgets import Field


class ConfirmDialog(ModalScreen[bool]):
    """Yes / No. Escape and n answer No: nothing destructive happens by accident."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, question: str, yes: str = "Yes", no: str = "No", title: str = "Confirm") -> None:
        super().__init__(classes="dialog-screen")
        self.question, self.yes, self.no, self.title_text = question, yes, no, title

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Static(self.question, classes="dialog-text")
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")
                yield Button(f"{self.no} (n)", id="no", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")


class PathDialog(ModalScreen[str | None]):
    """Ask for a path. `check` returns an error message (shown in place) or None to accept."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, value: str = "", placeholder: str = "",
                 check: Callable[[str], str | None] | None = None, ok: str = "OK") -> None:
        super().__init__(classes="dialog-screen")
        self.title_text, self.value, self.placeholder, self.check, self.ok = title, value, placeholder, check, ok

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Field(self.value, placeholder=self.placeholder, id="path")
            yield Static("", id="path-error", classes="field-error")
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.ok, id="ok", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        inp = self.query_one("#path", Input)
        inp.cursor_blink = getattr(self.app, "blink", True)
        inp.focus()

    def _accept(self) -> None:
        text = self.query_one("#path", Input).value.strip()
        err = "give a path" if not text else (self.check(text) if self.check else None)
        self.query_one("#path-error", Static).update(err or "")
        if not err:
            self.dismiss(text)

    @on(Input.Submitted, "#path")
    def _submitted(self) -> None:
        self._accept()

    @on(Input.Changed, "#path")
    def _changed(self) -> None:
        self.query_one("#path-error", Static).update("")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            self._accept()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


def _first_doc_line(path: Path) -> str:
    """The task's Model docstring (first line), read statically: task files are not executed."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            doc = ast.get_docstring(node) or ""
            return doc.strip().splitlines()[0] if doc.strip() else ""
    return ""


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class OpenTaskDialog(ModalScreen[str | None]):
    """Open a task file by path, or pick one of the bundled examples.

    The path field has the focus, always: what the user types goes there, and Enter opens the
    typed path (with the list focused, a typed path was lost and Enter opened the highlighted
    example instead). Down (or Tab) moves to the examples.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel"),
        Binding("down", "to_examples", "Examples", show=False),
    ]

    def __init__(self, examples: list[Path], value: str = "") -> None:
        super().__init__(classes="dialog-screen")
        self.examples, self.value = examples, value

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog dialog-wide"):
            yield Label("Open a task file", classes="dialog-title")
            yield Field(self.value, placeholder="path/to/task.py (Enter to open)", id="path")
            yield Static("", id="path-error", classes="field-error")
            yield Label("…or pick a bundled example (↓, then Enter; or click):", classes="dialog-text")
            yield OptionList(
                *[Option(f"{p.stem:<22} {_clip(_first_doc_line(p), 62)}", id=str(p)) for p in self.examples],
                id="examples",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Open", id="ok", variant="primary")
                yield Button("Cancel (esc)", id="cancel")

    def on_mount(self) -> None:
        inp = self.query_one("#path", Input)
        inp.cursor_blink = getattr(self.app, "blink", True)
        inp.focus()

    def action_to_examples(self) -> None:
        """Down in the path field: into the examples list, on its first entry."""
        examples = self.query_one("#examples", OptionList)
        if self.focused is not examples and examples.option_count:
            examples.focus()
            if examples.highlighted is None:
                examples.highlighted = 0

    def _open(self, text: str) -> None:
        text = text.strip()
        p = Path(text).expanduser()
        err = ("give a path, or pick an example below (↓)" if not text else f"{p} does not exist" if not p.exists()
               else f"{p} is a folder: give a task .py file" if p.is_dir() else None)
        self.query_one("#path-error", Static).update(err or "")
        if not err:
            self.dismiss(str(p))

    @on(Input.Submitted, "#path")
    def _submitted(self, event: Input.Submitted) -> None:
        self._open(event.value)

    @on(OptionList.OptionSelected, "#examples")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.dismiss(event.option.id)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "ok":
            ol = self.query_one("#examples", OptionList)
            text = self.query_one("#path", Input).value
            if not text.strip() and ol.highlighted is not None:
                opt = ol.get_option_at_index(ol.highlighted)
                text = opt.id or ""
            self._open(text)
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RestoreDialog(ModalScreen[bool]):
    """The last run did not exit cleanly: offer its autosave back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "answer(True)", "Restore"),
        Binding("d,escape", "answer(False)", "Discard"),
    ]

    def __init__(self, design: Design) -> None:
        super().__init__(classes="dialog-screen")
        self.design = design

    def compose(self) -> ComposeResult:
        d = self.design
        task = Path(d.task).name if d.task else "(no task)"
        tile = f", tile {tuple(d.tile)}" if d.tile else ""
        loop = f", loop_count {d.loop_count}" if d.loop_count else ""
        with Vertical(classes="dialog"):
            yield Label("Restore the last session?", classes="dialog-title")
            yield Static(
                f"pypto-tui did not exit cleanly last time. Its autosave holds {task} at the "
                f"{d.step} step{tile}{loop}.",
                classes="dialog-text", markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Restore (r)", id="restore", variant="primary")
                yield Button("Discard (d)", id="discard")

    def on_mount(self) -> None:
        self.query_one("#restore", Button).focus()

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "restore")
