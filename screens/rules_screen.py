"""The rule browser: every rule of the loaded pack, filterable, with its explanation and source.

It reads `KnowledgeBase.rules` only; swapping the pack changes what it lists.
"""

from __future__ import annotations

from typing import ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.coordinate import Coordinate
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Input, Static

from pypto_tui.kb import KnowledgeBase
from pypto_tui.screens.widgets import Field, RuleExplanation, rule_content


class RuleBrowserScreen(Screen[None]):
    """Filter by id, step, kind or words; the highlighted rule is explained on the right."""

    CSS_PATH = "rules_screen.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("f1", "close", "Close", show=False),
        Binding("ctrl+f", "focus_filter", "Filter"),
    ]

    def __init__(self, kb: KnowledgeBase) -> None:
        super().__init__()
        self.kb = kb

    def compose(self) -> ComposeResult:
        yield Header(icon="◆")
        with Vertical(id="rules-body"):
            yield Field("", id="rule-filter", select_on_focus=False,  # typing from the table appends
                        placeholder="type to filter: id, step, kind or words (e.g. contiguous, loops)")
            with Horizontal(id="rules-main"):
                yield DataTable(id="rule-table", cursor_type="row", zebra_stripes=True, classes="panel")
                yield RuleExplanation(id="rule-detail", classes="panel")
            yield Static("", id="rule-count")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"rules of pack {self.kb.name} {self.kb.version}"
        table = self.query_one("#rule-table", DataTable)
        table.border_title = "Rules"
        self.query_one("#rule-detail").border_title = "Rule"
        for col in ("id", "step", "kind", "severity", "statement"):
            table.add_column(col, key=col)
        self._fill("")
        table.focus()

    def _fill(self, text: str) -> None:
        words = text.lower().split()
        table = self.query_one("#rule-table", DataTable)
        table.clear()
        n = 0
        for rule in self.kb.rules.values():
            hay = " ".join((rule.id, rule.step, rule.kind, rule.severity, rule.statement, rule.explanation,
                            rule.authority)).lower()
            if all(w in hay for w in words):
                table.add_row(rule.id, rule.step, rule.kind, rule.severity, rule.statement, key=rule.id)
                n += 1
        self.query_one("#rule-count", Static).update(f"{n} of {len(self.kb.rules)} rules · esc closes")
        if n:
            table.move_cursor(row=0)
            self._show(str(table.coordinate_to_cell_key(Coordinate(0, 0)).row_key.value))
        else:
            self._show(None)

    def _show(self, rule_id: str | None) -> None:
        detail = self.query_one("#rule-detail", RuleExplanation)
        detail.update(rule_content(self.kb, rule_id) if rule_id else "No rule matches the filter.")

    @on(Input.Changed, "#rule-filter")
    def _filter(self, event: Input.Changed) -> None:
        event.stop()
        self._fill(event.value)

    @on(DataTable.RowHighlighted, "#rule-table")
    def _highlight(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        if event.row_key is not None and event.row_key.value:
            self._show(str(event.row_key.value))

    def on_key(self, event: events.Key) -> None:
        """Typing filters at once: a printable key pressed anywhere else goes to the filter field
        (the table has no letter bindings; ctrl+f still focuses the field)."""
        filt = self.query_one("#rule-filter", Input)
        if self.focused is filt or not event.is_printable or not event.character:
            return
        event.stop()
        event.prevent_default()
        filt.focus()
        filt.insert_text_at_cursor(event.character)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_focus_filter(self) -> None:
        self.query_one("#rule-filter", Input).focus()
