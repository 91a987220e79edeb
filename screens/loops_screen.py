"""Step 4, loops (rules P6, O2): is a loop needed and why, the candidates, and a chart of them.

The plan is `Pipeline.loop_plan()`; this screen shows it, lets the user pick a candidate (or type
any loop count), and draws the per-iteration numbers with textual-plotext. Once a simulator
sweep has run, the chart becomes the cost curve (µs per loop count, the U shape of rule O2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import DataTable, Input, Label, Static
from textual_plotext import PlotextPlot

from pypto_tui.design import Design
from pypto_tui.errors import InputError
from pypto_tui.findings import Finding, worst
from pypto_tui.kb import KnowledgeBase
from pypto_tui.loops import LoopPlan
from pypto_tui.loops import candidate as loop_candidate
from pypto_tui.plan import LoopCandidate, LoopChoice
from pypto_tui.screens.base import StepScreen, attempt
from pypto_tui.screens.sim_support import SimRunner, roofline_summary, sweep_summary
from pypto_tui.screens.widgets import Field, FindingsList, RuleExplanation, dims_text, level_content
from pypto_tui.vocabulary import TailPreference


def _key(c: LoopCandidate) -> str:
    return f"{c.loop_count}:{c.tail_strategy}"


def table_title(ranking: str) -> str:
    """The rows are always in the documents' order; the star is the pack's pick, which the cost
    estimate makes under `ranking = "auto"` (the title said "documents' order" either way)."""
    picker = "the cost estimate's pick" if ranking == "estimate" else "the documents' pick"
    return f"loop_count, documents' order · ★ {picker} · Enter uses a row"  # fits the panel at 120 columns


@dataclass(frozen=True)
class LoopView:
    """What the Loop step shows, all derived from one place: the plan and the loop the kernel runs
    (`Pipeline.loop_choice`). The headline, the findings, the ▶ row, the status line and the axis
    label used to come from different objects (the plan's need, the table cursor's row, the plan's
    element counts), and a conv showed "No loop needed" beside a chosen loop of 16."""

    headline: str
    reason: str
    axis_label: str
    chosen: LoopCandidate | None
    """The row the kernel runs: the loop's candidate, or loop_count 1 (one pass) when no loop runs."""
    runs_loop: bool
    findings: tuple[Finding, ...]
    status: str
    level: str


def _axis_label(plan: LoopPlan) -> str:
    length = plan.shape[plan.axis]
    blocks = f" = {plan.total} blocks of {plan.unit}; BASIC_BATCH counts blocks" if plan.unit > 1 else ""
    return f"loop axis {plan.axis} ({length}{blocks})"


def _one_pass(kb: KnowledgeBase, plan: LoopPlan) -> LoopCandidate:
    return next((c for c in plan.candidates if c.loop_count == 1 and c.tail_strategy != "main+tail"), None) or \
        loop_candidate(kb, plan.shape, plan.tile, plan.axis, 1, None, plan.unit, plan.max_chunk)


def loop_view(kb: KnowledgeBase, plan: LoopPlan, choice: LoopChoice | None, error: str | None = None) -> LoopView:
    """The shown plan: `choice` is the pipeline's loop (None: no loop runs), `error` why it could not be made."""
    label = _axis_label(plan)
    if error is not None:
        return LoopView("Loop needed" if plan.needs_loop else "No loop needed", plan.reason, label, None, False,
                        plan.findings, f"no loop count works: {error}", "error")
    if choice is None:
        one = _one_pass(kb, plan)
        if plan.needs_loop:  # the user asked for loop_count 1
            bad = tuple(f for f in one.findings if f.level in ("warn", "error"))
            return LoopView("Loop needed, none chosen", f"{plan.reason}; loop_count 1 runs it in one pass", label,
                            one, False, (*plan.findings, *bad),
                            "loop_count 1: one pass although a loop is needed (see the findings)",
                            worst(bad) if bad else "warn")
        return LoopView("No loop needed", plan.reason, label, one, False, plan.findings,
                        "no loop: the kernel runs in one pass", "ok")
    cand = choice.candidate
    shown = (*plan.findings, *cand.findings, *(f for f in choice.findings if f not in cand.findings))
    if plan.needs_loop:
        head, reason = "Loop needed", plan.reason
    else:
        head, reason = "Loop chosen", f"loop_count {cand.loop_count} was picked; none is needed ({plan.reason})"
    per = f" x {plan.unit}" if plan.unit > 1 else ""
    status = (f"loop_count {cand.loop_count}, BASIC_BATCH {cand.basic_batch}{per}, {cand.num_iters} iterations"
              + (f", tail {cand.tail}" if cand.has_tail else ""))
    lvl = worst(shown)
    return LoopView(head, reason, label, cand, True, shown, status,
                    "error" if lvl == "error" else "ok" if lvl in ("ok", "info") else lvl)


class LoopsScreen(SimRunner, StepScreen):
    """Loop need and reason, candidate table (recommended ★, chosen ▶), chart, findings."""

    STEP = "loops"
    KERNEL_PICKER = True
    CSS_PATH = "loops_screen.tcss"
    AUTO_FOCUS = "#loop-table"
    RUN_LABEL = "Simulate loop counts"
    SIM_KIND = "loops"
    BUSY_TEXT = "planning the loop counts"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_check", "Simulate", priority=True),
        Binding("ctrl+d", "use_recommended", "Recommended", priority=True),
        Binding("escape", "cancel_sim", "Cancel sim", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plan: LoopPlan | None = None
        self.view: LoopView | None = None
        self._rows: dict[str, LoopCandidate] = {}
        self._times: dict[int, float | None] = {}
        self._plan_key: Any = None
        self._sweep_lines: list[str] = []
        self._table_sig: Any = None
        self._chart_sig: Any = None
        self._pack_pick: str | None = None

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="loop-top"):
            with Vertical(id="loop-need", classes="panel"):
                yield Static("", id="need-text")
                with Horizontal(id="custom-row"):
                    yield Label("loop_count", id="custom-label")
                    yield Field("", id="custom-count", placeholder="count", compact=True)
                    yield Static("", id="custom-error", classes="field-error")
                yield FindingsList(id="loop-findings")
                yield Static("", id="loop-sweep")
            yield PlotextPlot(id="chart", classes="panel")
        with Horizontal(id="loop-bottom"):
            yield DataTable(id="loop-table", cursor_type="row", zebra_stripes=True, classes="panel")
            yield RuleExplanation(id="loop-explain", classes="panel")

    def on_mount(self) -> None:
        self.query_one("#loop-need").border_title = "Loop"
        self.query_one("#chart").border_title = "Candidates"
        self.query_one("#loop-explain").border_title = "Rule"
        table = self.query_one("#loop-table", DataTable)
        table.border_title = table_title("rules")
        for col in ("", "loop_count", "BASIC_BATCH", "iters", "tail", "tiles/iter", "verdict", "µs"):
            table.add_column(col, key=col or "mark")
        super().on_mount()

    # ------------------------------------------------------------------ refresh
    def prepare(self) -> None:
        super().prepare()
        pipe = self.session.step_pipeline
        pipe.loop_plan()
        pipe.loop_choice()

    def refresh_step(self) -> None:
        plan, err = attempt(self.session.step_pipeline.loop_plan)
        self.plan = plan
        need = self.query_one("#need-text", Static)
        if plan is None:
            need.update(err or "choose a tile first (step 3)")
            self.query_one("#loop-table", DataTable).clear()
            self.query_one("#loop-findings", FindingsList).show(())
            self.set_status(err or "no tile yet", "error")
            return
        key = (plan.shape, plan.tile)
        if key != self._plan_key:
            self._plan_key = key
            self._times = {}
            self._sweep_lines = []
        choice, cerr = attempt(self.session.step_pipeline.loop_choice)
        view = self.view = loop_view(self.session.kb, plan, choice, cerr)
        need.update(Content.assemble((view.headline, "bold"), f": {view.reason}\n",
                                     (f"shape {dims_text(plan.shape)}, tile {dims_text(plan.tile)}, {view.axis_label}, "
                                      f"auto_tiles {plan.auto_tiles}", "dim")))
        sweep = self.query_one("#loop-sweep", Static)
        sweep.update("\n".join(self._sweep_lines))
        sweep.display = bool(self._sweep_lines)
        need.set_class(plan.needs_loop or view.runs_loop, "-needed")
        self.query_one("#loop-table", DataTable).border_title = table_title(plan.ranking)
        self._pack_pick = self._pack_recommendation(plan)
        with self.prevent(Input.Changed):
            self.query_one("#custom-count", Input).value = str(self.session.step_pipeline.design.loop_count or "")
        self._fill_table(plan, view.chosen)
        self._draw_chart(plan)
        self._show_findings(None)
        self.set_status(view.status, view.level)

    def _show_findings(self, row: LoopCandidate | None) -> None:
        """The findings of the loop the kernel runs; of another row only while the table's cursor
        is on it, and then the panel's title says which row they belong to."""
        view = self.view
        panel = self.query_one("#loop-findings", FindingsList)
        if view is None or self.plan is None:
            return
        if row is None or (view.chosen is not None and _key(row) == _key(view.chosen)):
            panel.show(view.findings)
            self.query_one("#loop-need").border_subtitle = ""
        else:
            panel.show(list(self.plan.findings) + list(row.findings))
            self.query_one("#loop-need").border_subtitle = (
                f"findings of loop_count {row.loop_count} (highlighted, not chosen: Enter uses it)")

    def chosen(self) -> LoopCandidate | None:
        """The candidate the kernel will use (the ▶ row): the loop step's choice (the user's count,
        else the recommended one, with a constant-shape tail when the count leaves one), or
        loop_count 1 when no loop runs."""
        return self.view.chosen if self.view is not None and self.plan is not None else None

    _own_pick: tuple[Any, str | None] | None = None

    def _pack_recommendation(self, plan: LoopPlan) -> str | None:
        """The row key of the pack's own pick. With a loop count chosen, the plan puts that count
        first as its "recommended" one; the ★ must stay on the pack's pick (never move onto the
        user's row, an ERROR one included), so that pick is planned without the choice."""
        pipe = self.session.step_pipeline
        if pipe.design.loop_count is None:
            return _key(plan.recommended) if plan.recommended else None
        # the pack's own plan, priced as the pipeline prices it (ranking = auto: the estimate's
        # pick); re-planning with plan_loops alone gave the documents' pick, a row not shown
        base = pipe.with_design(loop_count=None, loop_tail=None)
        sig = (id(pipe.kb), base.design.to_json(), plan.shape, plan.tile, plan.axis)  # a chain's kernels share a design
        if self._own_pick is not None and self._own_pick[0] == sig:
            return self._own_pick[1]  # a fresh pipeline re-reads the task: once per design, not per key
        own, _ = attempt(base.loop_plan)
        pick = _key(own.recommended) if own is not None and own.recommended else None
        self._own_pick = (sig, pick)
        return pick

    def _fill_table(self, plan: LoopPlan, chosen: LoopCandidate | None) -> None:
        sig = (id(plan), _key(chosen) if chosen else None, tuple(sorted(self._times.items())), self._pack_pick)
        if sig == self._table_sig:
            return  # unchanged: rebuilding the table would repaint it for nothing
        self._table_sig = sig
        table = self.query_one("#loop-table", DataTable)
        table.clear()
        self._rows = {}
        for c in list(plan.candidates) + list(plan.alternatives):
            k = _key(c)
            if k in self._rows:
                continue
            self._rows[k] = c
            mark = ("▶" if chosen is not None and k == _key(chosen) else "") + ("★" if k == self._pack_pick else "")
            t = self._times.get(c.loop_count)
            label = f"{c.loop_count}" + (" main+tail" if c.tail_strategy == "main+tail" else "")
            table.add_row(mark, label, str(c.basic_batch), str(c.num_iters), str(c.tail),
                          str(c.auto_tiles_per_iter), level_content(worst(f for f in c.findings if f.level != "info")),
                          "" if c.loop_count not in self._times else ("fail" if t is None else f"{t:.1f}"),
                          key=k)
        table.set_class(not plan.needs_loop, "-dim")
        if chosen is not None and _key(chosen) in self._rows:  # the cursor starts on the ▶ row
            table.move_cursor(row=list(self._rows).index(_key(chosen)), animate=False)

    def _draw_chart(self, plan: LoopPlan) -> None:
        sig = (id(plan), tuple(sorted(self._times.items())), self.app.current_theme.name)
        if sig == self._chart_sig:
            return
        self._chart_sig = sig
        chart = self.query_one("#chart", PlotextPlot)
        plt = chart.plt
        plt.clear_data()
        plt.clear_figure()
        cands = sorted({c.loop_count: c for c in plan.candidates}.values(), key=lambda c: c.loop_count)
        if not cands:
            chart.refresh()
            return
        xs = [math.log2(c.loop_count) for c in cands]
        labels = [str(c.loop_count) for c in cands]
        timed = [(math.log2(n), t) for n, t in sorted(self._times.items()) if t is not None]
        if timed:
            plt.plot([x for x, _ in timed], [t for _, t in timed], marker="braille", label="µs (cost model)")
            plt.scatter([x for x, _ in timed], [t for _, t in timed], marker="dot")
            plt.title("cost-model time per loop_count (µs)")
            plt.ylabel("µs")
        else:
            ys = [c.auto_tiles_per_iter for c in cands]
            plt.plot(xs, ys, marker="braille", label="tiles per iteration")
            plt.scatter(xs, ys, marker="dot")
            cap = self.session.kb.limits.max_auto_tiles
            if max(ys) >= cap / 4:
                plt.hline(cap)
            plt.title(f"auto_tiles per iteration (limit {cap}); ctrl+r simulates the µs curve")
        plt.xticks(xs, labels)
        plt.xlabel("loop_count (log scale)")
        chart.refresh()

    # ------------------------------------------------------------------ choosing
    def _choose(self, count: int | None, tail: TailPreference | None) -> None:
        def set_loop(d: Design) -> None:
            d.loop_count = count
            d.loop_tail = tail

        self.session.change("loops", set_loop)
        self.safe_refresh()

    @on(DataTable.RowSelected, "#loop-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        c = self._rows.get(event.row_key.value or "")
        if c is None:
            return
        self._choose(c.loop_count, "main+tail" if c.tail_strategy == "main+tail" else None)

    @on(DataTable.RowHighlighted, "#loop-table")
    def _row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        c = self._rows.get(event.row_key.value or "") if event.row_key else None
        if c is not None:
            self._show_findings(c)

    @on(Input.Changed, "#custom-count")
    def _custom_changed(self, event: Input.Changed) -> None:
        event.stop()
        err = self.query_one("#custom-error", Static)
        text = event.value.strip()
        if not text:
            err.update("")
            self._choose(None, None)
            return
        try:
            n = int(text)
            if n < 1:
                raise InputError("loop_count must be a positive whole number")
            if self.plan is not None and n > self.plan.total:
                raise InputError(f"loop_count {n} > the loop axis length {self.plan.total}")
        except (ValueError, InputError) as exc:
            err.update(f"✗ {exc}" if isinstance(exc, InputError) else "✗ a whole number")
            return
        err.update("")
        self._choose(n, None)

    def action_use_recommended(self) -> None:
        self._choose(None, None)

    @on(FindingsList.Selected)
    def _finding_selected(self, event: FindingsList.Selected) -> None:
        event.stop()
        self.query_one("#loop-explain", RuleExplanation).explain(self.session.kb, event.finding)

    def next_blocked(self) -> str | None:
        if self.plan is None:
            return "no loop plan: go back to the tile step"
        if self.plan.needs_loop or (self.view is not None and self.view.runs_loop):
            c = self.chosen()
            if c is None:
                return "no loop count works with this tile: change the tile"
            if not c.ok:
                bad = ", ".join(sorted({f.rule for f in c.findings if f.level == "error"}))
                return f"loop_count {c.loop_count} has error-level findings ({bad}): pick another"
        return None

    # ------------------------------------------------------------------ sim
    def sim_results(self, report: Any) -> None:
        """The µs column and the cost curve (rule O2's U shape), with both verdicts in words."""
        self._times.update({int(r.value): r.e2e_us for r in report.rows if r.measured})
        self._sweep_lines = [*sweep_summary(report), *roofline_summary(self.session.step_pipeline, report)]
        self._table_sig = self._chart_sig = None
        self.safe_refresh()
        cost = report.best_by_cost
        self.set_status(f"simulated {report.simulations} loop count(s)"
                        + (f": fastest {cost.label} at {cost.e2e_us:.2f} µs" if cost else ""), "ok")
