"""Widgets shared by the step screens: the step indicator, findings, the rule explanation panel.

They only display what the core computed (`Finding`s with their rule id and level, `Rule`s from
the pack); colours come from the theme's variables so light and dark themes both read well.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

from pypto_tui.design import STEPS
from pypto_tui.findings import Finding
from pypto_tui.kb import KnowledgeBase

LEVEL_STYLE = {"error": "bold $text-error on $error-muted", "warn": "bold $text-warning on $warning-muted",
               "info": "$text-accent", "ok": "$text-success"}
_ORDER = {"error": 0, "warn": 1, "info": 2, "ok": 3}
LEVEL_LABEL = {"error": " ERROR ", "warn": " WARN  ", "info": " info  ", "ok": " ok    "}
STEP_LABELS = {"contract": "Contract", "dims": "Dimensions", "tiles": "Tiles", "loops": "Loops",
               "kernel": "Kernel"}


def level_content(level: str) -> Content:
    return Content.styled(LEVEL_LABEL.get(level, level.upper()), LEVEL_STYLE.get(level, ""))


def finding_content(f: Finding) -> Content:
    """One finding as a line: level, rule id, message (the message is never parsed as markup)."""
    return Content.assemble(level_content(f.level), " ", (f.rule, "bold"), "  ", f.message)


def dims_text(dims: Sequence[int] | None) -> str:
    if dims is None:
        return "?"
    return "(" + ", ".join(str(d) for d in dims) + ("," if len(dims) == 1 else "") + ")"


class FixedSize:
    """For widgets whose size the stylesheet fixes: a change of content never needs a layout pass.

    Textual asks for a layout of the whole screen when a widget's virtual size changes (an Input
    on every keystroke, an OptionList when its line count changes). For a widget of fixed size
    that only moves its own scroll range, so a repaint is enough, and the keystroke path stays
    within a frame. Widgets sized by their content (auto) keep the layout pass.
    """

    def refresh(self, *regions: Any, repaint: bool = True, layout: bool = False,
                recompose: bool = False) -> Any:
        if layout and not recompose and self.is_mounted and not self.styles.auto_dimensions:  # type: ignore[attr-defined]
            layout = False
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)  # type: ignore[misc]


class Field(FixedSize, Input):
    """An Input whose cursor blinks only when the app says so (snapshots need it still), and
    whose editing keys apply in the order they were typed.

    Textual's Input inserts a printable key as soon as the key reaches it, but leaves a key that
    is one of its bindings (backspace, delete, the arrows, home, end) to bubble up through every
    parent's message queue to the App, which only then runs the binding. Keys that arrive
    together (a fast typist, a busy machine, a terminal delivering a burst) were therefore applied
    out of order: three backspaces then `256` in "384" inserted 256 first and deleted it again,
    leaving "384". A Field runs its own bindings when the key reaches it, in arrival order.
    """

    def on_mount(self) -> None:
        self.cursor_blink = getattr(self.app, "blink", True)

    async def _on_key(self, event: events.Key) -> None:
        if event.is_printable:
            return  # Input._on_key inserts it, in order
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if not binding.priority and await self.app.run_action(binding.action, self):
                event.stop()
                event.prevent_default()  # handled: neither Input._on_key nor the App runs it again
                return


class StepTab(Static):
    """One step in the indicator; clicking it jumps there when the step may be visited."""

    class Clicked(Message):
        def __init__(self, step: str) -> None:
            super().__init__()
            self.step = step

    def __init__(self, step: str) -> None:
        super().__init__(id=f"step-{step}", classes="step-tab")
        self.step = step

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.post_message(self.Clicked(self.step))


class StepIndicator(Horizontal):
    """1 Contract > 2 Dimensions > ...: current, finished, stale and locked steps styled apart."""

    def compose(self) -> ComposeResult:
        for step in STEPS:
            yield StepTab(step)

    def show(self, current: str, finished: Iterable[str], stale: Iterable[str],
             visitable: Iterable[str]) -> None:
        finished, stale, visitable = set(finished), set(stale), set(visitable)
        for i, step in enumerate(STEPS, 1):
            tab = self.query_one(f"#step-{step}", StepTab)
            mark = "●" if step == current else "!" if step in stale else "✓" if step in finished else "·"
            tab.update(f" {mark} {i} {STEP_LABELS[step]} ")
            tab.set_class(step == current, "-current")
            tab.set_class(step in finished and step != current, "-done")
            tab.set_class(step in stale, "-stale")
            tab.set_class(step not in visitable and step != current, "-locked")
            tab.tooltip = (
                "current step" if step == current else
                "stale: recomputed after an earlier change, review it" if step in stale else
                f"finished: click (or press {i} outside a text field) to jump back" if step in finished else
                "open: click to go there" if step in visitable else "finish the earlier steps first"
            )


NO_FINDINGS = "no findings"


def _placeholder(text: str = NO_FINDINGS) -> Option:
    return Option(Content.styled(text, "dim italic"), disabled=True)


class FindingsList(FixedSize, OptionList):
    """Findings coloured by level with their rule id; the highlighted one is explained beside it."""

    class Selected(Message):
        def __init__(self, finding: Finding | None) -> None:
            super().__init__()
            self.finding = finding

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(_placeholder(), id=id, classes=classes)
        self._placeholder = True
        self._empty = NO_FINDINGS
        self.findings: tuple[Finding, ...] = ()
        self._pinned: str | None = None

    def show(self, findings: Iterable[Finding], empty: str = NO_FINDINGS) -> None:
        """Replace the list (worst first). The user's pick stays highlighted unless something
        worse appeared; otherwise the worst finding is highlighted, so its rule is explained.
        `empty` is shown when there is nothing to list (say why: "no findings" is a verdict)."""
        new = tuple(sorted(findings, key=lambda f: _ORDER.get(f.level, 4)))  # stable
        if new == self.findings and (new or empty == self._empty):
            return
        old = self.findings
        self.findings = new
        self._empty = empty
        with self.prevent(OptionList.OptionHighlighted):
            if self._placeholder:
                self.remove_option_at_index(0)
                self._placeholder = False
            # Edit the list in place: clearing it would flip the scrollbar off and on, and each
            # flip costs a layout pass of the whole screen (this runs on every keystroke).
            common = min(len(old), len(new))
            for i in range(common):
                if old[i] != new[i]:
                    self.replace_option_prompt_at_index(i, finding_content(new[i]))
            for i in range(len(old) - 1, common - 1, -1):
                self.remove_option_at_index(i)
            if len(new) > common:
                self.add_options([Option(finding_content(f)) for f in new[common:]])
            if not new:
                self.add_option(_placeholder(empty))
                self._placeholder = True
            if new:
                idx = 0
                pinned = next((i for i, f in enumerate(new) if f.rule == self._pinned), None)
                if pinned is not None and _ORDER.get(new[0].level, 4) >= _ORDER.get(new[pinned].level, 4):
                    idx = pinned
                self.highlighted = idx
        self.post_message(self.Selected(self.current))

    @property
    def current(self) -> Finding | None:
        if self.highlighted is None or self.highlighted >= len(self.findings):
            return None
        return self.findings[self.highlighted]

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        cur = self.current
        self._pinned = cur.rule if cur is not None else None
        self.post_message(self.Selected(cur))


class TextView(FixedSize, ScrollView, can_focus=True):
    """Wrapped, styled, scrollable text in a box of fixed size.

    A `Static` in a scroll container sizes itself to its text, so every new text costs a layout
    pass of the whole screen (15-30 ms here). This renders the lines itself and only moves its own
    scroll range, so swapping the explanation while the user types stays off the frame budget.

    The scrollbar's gutter is always reserved: the text wraps to one width whether or not the
    scrollbar shows. Without it a text one line taller than the box has two stable layouts
    (narrow with a scrollbar, wide without) and which one is drawn depended on timing.
    """

    DEFAULT_CSS = "TextView { scrollbar-gutter: stable; }"

    def __init__(self, content: Content | str = "", *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._content: Content | str = content
        self._strips: list[Strip] | None = None
        self._strips_width = -1

    @property
    def content(self) -> Content | str:
        return self._content

    def render(self) -> Content | str:
        """The text as a whole (for tests and for `str(widget.render())`)."""
        return self._content

    def update(self, content: Content | str) -> None:
        self._content = content
        self._strips = None
        self.scroll_to(y=0, animate=False)
        self.refresh()

    def _lines(self) -> list[Strip]:
        width = self.scrollable_content_region.width
        if self._strips is None or self._strips_width != width:
            visual = visualize(self, self._content, markup=False)
            self._strips = Visual.to_strips(self, visual, max(width, 1), None, self.visual_style)
            self._strips_width = width
            size = Size(width, len(self._strips))
            if size != self.virtual_size:
                self.virtual_size = size
                # No layout pass follows (FixedSize), so the scrollbar is told here; without it a
                # text taller than its box showed no scrollbar until something else laid out.
                self._scroll_update(size)
        return self._strips

    def render_line(self, y: int) -> Strip:
        lines = self._lines()
        width = self.scrollable_content_region.width
        index = y + self.scroll_offset.y
        if index < len(lines):
            return lines[index].crop(self.scroll_offset.x).adjust_cell_length(width, self.rich_style)
        return Strip.blank(width, self.rich_style)

    def on_resize(self) -> None:
        self._strips = None


class RuleExplanation(TextView):
    """The selected finding's rule from the pack: statement, why, whose rule it is."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(Content.from_markup("[dim]Select a finding to see the rule behind it."), id=id,
                         classes=classes)
        self._shown: tuple[str | None, str | None] | None = None  # nothing drawn yet
        self._pending: tuple[KnowledgeBase, Finding | None] | None = None

    def explain(self, kb: KnowledgeBase, finding: Finding | None) -> None:
        """Show the finding's rule; nothing happens while the rule stays the same (typing)."""
        key = (finding.rule if finding else None, finding.level if finding else None)
        if key == self._shown:
            return
        self._shown = key
        self.update(rule_content(kb, finding.rule if finding else None, finding))


def unwrap(text: str) -> str:
    """Join the hard-wrapped lines of a TOML paragraph so the panel can wrap them to its width."""
    out: list[str] = []
    for para in text.strip().split("\n\n"):
        lines: list[str] = []
        for line in para.splitlines():
            line = line.strip()
            if lines and not line.startswith(("- ", "* ", "• ")):
                lines[-1] += " " + line
            else:
                lines.append(line)
        out.append("\n".join(lines))
    return "\n\n".join(p for p in out if p)


def rule_content(kb: KnowledgeBase, rule_id: str | None, finding: Finding | None = None) -> Content:
    if rule_id is None:
        return Content.from_markup("[dim]Select a finding to see the rule behind it.")
    rule = kb.rule(rule_id)
    parts: list[Content | str | tuple[str, str]] = [(rule_id, "bold")]
    if finding is not None:
        parts += ["  ", level_content(finding.level)]
    if rule is None:
        parts += ["\n\n", ("This rule id is not in the loaded pack.", "$text-warning")]
        return Content.assemble(*parts)
    src = kb.sources.get(rule.source)
    parts += [
        "\n", (f"{rule.kind} · severity {rule.severity} · step {rule.step} · authority {rule.authority}", "dim"),
        "\n\n", (rule.statement, "bold"),
        "\n\n", unwrap(rule.explanation),
    ]
    if src is not None:
        parts += ["\n\n", (f"Source: {src.title}", "italic dim")]
    return Content.assemble(*parts)
