"""Step 2, dimensions (rules P1-P3, O3): the kernel rank and reshape the pack proposes.

Shows the dimension plan (`Pipeline.dims()`): the strategy and the rule that drives it, the
reshape `forward` does before and after the call, the kernel's shapes, the reduce axis and the
merge of contiguous reduce axes, and the alternatives. Picking an alternative sets
`Design.strategy`; the findings then say what rule it breaks, if any.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widgets import DataTable, Static

from pypto_tui.design import Design
from pypto_tui.screens.base import StepScreen, attempt
from pypto_tui.screens.widgets import FindingsList, RuleExplanation, dims_text, unwrap


def _g(obj: Any, *names: str, default: Any = None) -> Any:
    """The first attribute (or key) of `obj` among `names`."""
    for n in names:
        if isinstance(obj, dict) and n in obj:
            return obj[n]
        if hasattr(obj, n):
            return getattr(obj, n)
    return default


def _shapes(v: Any) -> str:
    if not v:
        return "-"
    if isinstance(v, list) and v and isinstance(v[0], list | tuple | type(None)):
        return ", ".join(dims_text(s) for s in v)
    return dims_text(v)


class DimsScreen(StepScreen):
    """The dimension plan and its alternatives (Enter or click picks one)."""

    STEP = "dims"
    KERNEL_PICKER = True
    CSS_PATH = "dims_screen.tcss"
    AUTO_FOCUS = "#dims-alts"
    BUSY_TEXT = "planning the kernel's dimensions"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "use_default", "Pack's choice", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.plan: Any = None
        self._alt_ids: dict[str, str | None] = {}

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="dims-top"):
            yield Static("", id="dims-plan", classes="panel")
            with Vertical(id="dims-side"):
                yield FindingsList(id="dims-findings", classes="panel")
                yield RuleExplanation(id="dims-explain", classes="panel")
        yield DataTable(id="dims-alts", cursor_type="row", zebra_stripes=True, classes="panel")

    def on_mount(self) -> None:
        self.query_one("#dims-plan").border_title = "Dimension plan"
        self.query_one("#dims-findings").border_title = "Findings"
        self.query_one("#dims-explain").border_title = "Rule"
        table = self.query_one("#dims-alts", DataTable)
        table.border_title = "Strategies (Enter or click to use; ctrl+d back to the pack's choice)"
        for col in ("", "strategy", "reshape", "kernel shapes", "rule", "note"):
            table.add_column(col, key=col or "mark")
        super().on_mount()

    def prepare(self) -> None:
        super().prepare()
        pipe = self.session.step_pipeline
        pipe.dims()
        pipe.geometry()

    def refresh_step(self) -> None:
        pipe = self.session.step_pipeline
        plan, err = attempt(pipe.dims)
        self.plan = plan
        box = self.query_one("#dims-plan", Static)
        if plan is None:
            box.update(Content.styled(f"✗ {err}", "$text-error"))
            self.query_one("#dims-findings", FindingsList).show(())
            self.query_one("#dims-alts", DataTable).clear()
            self.set_status(err or "no plan", "error")
            return
        merged = ", ".join("+".join(map(str, g)) for g in plan.merged_axes) or "none"
        fwd = "; ".join(f"{i.name} -> {dims_text(r) if r is not None else 'as is'}"
                        for i, r in zip(pipe.contract().tensor_inputs, plan.forward_reshape, strict=False)) or "-"
        lines: list[Content | str | tuple[str, str]] = [
            ("strategy         ", "dim"), (str(plan.strategy or "-"), "bold"), "\n",
            ("reshape, rule    ", "dim"), f"{plan.reshape or '-'}, {plan.rule or '-'}", "\n",
            ("kernel rank      ", "dim"), str(plan.kernel_rank if plan.kernel_rank is not None else "?"), "\n",
            ("forward reshape  ", "dim"), fwd, "\n",
            ("kernel inputs    ", "dim"), _shapes(plan.kernel_shapes), "\n",
            ("kernel output    ", "dim"), _shapes(plan.output_kernel_shape), "\n",
            ("back to          ", "dim"), _shapes(plan.output_reshape), "\n",
            ("reduce axis      ", "dim"), "-" if plan.reduce_axis is None else str(plan.reduce_axis),
            f"  (all: {', '.join(map(str, plan.reduce_axes))})" if len(plan.reduce_axes) > 1 else "", "\n",
            ("merged axes      ", "dim"), merged,
        ]
        if plan.merge_reason:
            lines += ["\n", ("merge: ", "dim"), (plan.merge_reason, "italic")]
        if plan.note and plan.window is None:  # a conv's or pool's own plan below says what it does
            lines += ["\n\n", unwrap(plan.note)]
        geometry, gerr = attempt(pipe.geometry)
        needs = attempt(pipe.needs)[0] if geometry is not None else None
        if needs is not None and needs.layout:  # the pattern's own plan (a conv's im2col geometry)
            lines += ["\n\n", ("the kernel's plan", "bold underline")]
            for label, value in needs.layout:
                lines += ["\n", (f"{label:<17}", "dim"), unwrap(value)]
        if geometry is not None:
            main = needs.tiles[0] if needs is not None and needs.tiles else None
            shape = main.shape if main is not None else geometry.shape
            lines += ["\n\n", ("the tile step works on ", "dim"),
                      (f"{main.name + ' ' if main is not None and needs and needs.layout else ''}"
                       f"{dims_text(shape)} {geometry.dtype}", "bold"),
                      f", reduce dim {geometry.reduce_dim}" if geometry.reduce_dim is not None else "",
                      f", matmul M,K,N = {needs.cube if needs is not None and needs.cube else geometry.matmul}"
                      if (needs is not None and needs.cube) or geometry.matmul else ""]
        box.update(Content.assemble(*lines))
        self.query_one("#dims-findings", FindingsList).show(plan.findings)
        self._fill_alternatives(plan)
        if gerr:
            self.set_status(gerr, "error")
        else:
            self.set_status(f"rank-{plan.kernel_rank} kernel ({plan.strategy}): ctrl+n for the tiles", "ok")

    def _fill_alternatives(self, plan: Any) -> None:
        """The chosen strategy, the table's choice and the alternatives, each planned by the core."""
        from pypto_tui.dims import plan_dims

        table = self.query_one("#dims-alts", DataTable)
        table.clear()
        self._alt_ids = {}
        pipe = self.session.step_pipeline
        contract = pipe.contract()
        default = attempt(lambda: plan_dims(contract, self.session.kb, None))[0]
        default_id = default.strategy if default is not None else None
        ids: list[str] = []
        for sid in [default_id, plan.strategy, *plan.alternatives]:
            if sid and sid not in ids:
                ids.append(sid)
        by_id = {s.id: s for s in self.session.kb.strategies}
        kb = self.session.kb
        for sid in ids:
            alt = plan if sid == plan.strategy else attempt(partial(plan_dims, contract, kb, sid))[0]
            strat = by_id.get(sid)
            mark = ("▶" if sid == plan.strategy else "") + ("★" if sid == default_id else "")
            self._alt_ids[sid] = sid
            # a conv's or pool's row says what its plan does (flat planes, stride phases ...), which the
            # pack's one note per strategy cannot
            note = (alt.window.strategy_text() if alt is not None and alt.window is not None
                    else strat.note if strat else "")
            table.add_row(mark, sid, strat.reshape if strat else "", _shapes(alt.kernel_shapes) if alt else "?",
                          strat.rule if strat else "", unwrap(note), key=sid)

    @on(DataTable.RowSelected, "#dims-alts")
    def _picked(self, event: DataTable.RowSelected) -> None:
        event.stop()
        sid = self._alt_ids.get(event.row_key.value or "")
        self._set_strategy(sid)

    def _set_strategy(self, sid: str | None) -> None:
        def put(d: Design) -> None:
            d.strategy = sid

        self.session.change("dims", put)
        self.safe_refresh()

    def action_use_default(self) -> None:
        self._set_strategy(None)

    @on(FindingsList.Selected)
    def _finding_selected(self, event: FindingsList.Selected) -> None:
        event.stop()
        self.query_one("#dims-explain", RuleExplanation).explain(self.session.kb, event.finding)

    def next_blocked(self) -> str | None:
        if self.plan is None:
            return "no dimension plan: fix the contract first"
        _, gerr = attempt(self.session.step_pipeline.geometry)
        return gerr
