"""Step 3, tiles (rules P4, O1): edit the tile per axis with live checks, or pick a ranked one.

Every keystroke in a tile field runs `evaluate_tile` (plain Python, tens of microseconds) and
redraws the numbers and the findings; nothing here decides what is good, the core does. The
ranked table comes from `Pipeline.tile_plan()` (numpy, cached per shape). A matmul also gets its
cube tiles (m, k, n as [L0, L1]) checked live by `evaluate_cube`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.widget import Widget
from textual.widgets import DataTable, Input, Label, Static

from pypto_tui.design import Design
from pypto_tui.errors import InputError
from pypto_tui.findings import worst
from pypto_tui.plan import Geometry, TileChoice, TileEvaluation
from pypto_tui.screens.base import StepScreen, attempt
from pypto_tui.screens.sim_support import SimRunner, roofline_summary, sweep_summary
from pypto_tui.screens.widgets import (
    Field,
    FindingsList,
    RuleExplanation,
    dims_text,
    level_content,
)
from pypto_tui.shapes import MAX_DIM, clip, parse_dims
from pypto_tui.tiles import TilePlan, evaluate_cube, evaluate_tile


def _tile_size_problem(text: str, axis: int, length: int) -> str | None:
    """What is wrong with one tile field's text, in the words of that field (None: a usable size)."""
    try:
        v = int(text)
    except ValueError:
        return f"axis {axis}: '{clip(text, 20)}' is not a whole number (1..{length})"
    if v < 1:
        return f"axis {axis}: a tile size is a positive whole number ({v} covers nothing): use 1..{length}"
    if v > MAX_DIM:
        return f"axis {axis}: {v} is far beyond the axis ({length}): use 1..{length}"
    return None


def _axis_label(g: Geometry, axis: int) -> str:
    """`axis 1 R /256`: the axis, whether the kernel reduces it, its length."""
    return f"axis {axis}{' R' if g.reduce_dim == axis else ''} /{g.shape[axis]}"


class TilesScreen(SimRunner, StepScreen):
    """Tile fields with live checks, the findings and their rules, the ranked candidates."""

    STEP = "tiles"
    KERNEL_PICKER = True
    CSS_PATH = "tiles_screen.tcss"
    AUTO_FOCUS = None  # the tile fields are built per shape: focused in _build_fields
    BUSY_TEXT = "ranking the tile candidates"
    RUN_LABEL = "Simulate tile candidates"
    SIM_KIND = "tiles"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_check", "Simulate", priority=True),
        Binding("ctrl+d", "use_recommended", "Recommended", priority=True),
        Binding("escape", "cancel_sim", "Cancel sim", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._geometry: Geometry | None = None
        self._cube_source = ""  # where the shown cube tiles come from (the pack's search, the design ...)
        self._plan: TilePlan | None = None
        self._choice: TileChoice | None = None
        self._times: dict[tuple[int, ...], float | None] = {}
        self.last_evaluation: TileEvaluation | None = None
        self.last_error: str | None = None
        self._shown: dict[str, str] = {}
        self._fields: list[Input] | None = None
        self._table_sig: Any = None

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="tile-top"):
            with Vertical(id="tile-editor", classes="panel"):
                yield Static("", id="tile-shape")
                yield Horizontal(id="tile-fields")
                yield Static("", id="tile-error", classes="field-error")
                yield Static("", id="tile-metrics")
                yield Static("", id="tile-why")
                yield Static("", id="sim-report")
                with Vertical(id="cube-box"):
                    yield Label("Cube tiles (set_cube_tile_shapes: [L0, L1] each)", classes="section-title")
                    with Horizontal(id="cube-fields"):
                        for name in ("m", "k", "n"):
                            yield Label(f"{name}", classes="cube-label")
                            yield Field("", id=f"cube-{name}", classes="cube-field", compact=True)
                    yield Static("", id="cube-error", classes="field-error")
                    yield FindingsList(id="cube-findings")
            with Vertical(id="tile-right"):
                yield FindingsList(id="findings", classes="panel")
                yield RuleExplanation(id="explain", classes="panel")
        yield DataTable(id="candidates", cursor_type="row", zebra_stripes=True, classes="panel")

    def on_mount(self) -> None:
        self.query_one("#findings").border_title = "Findings (live)"
        self.query_one("#explain").border_title = "Rule"
        self.query_one("#tile-editor").border_title = "Tile"
        table = self.query_one("#candidates", DataTable)
        table.border_title = "Ranked candidates (Enter or click to use)"
        for col in ("", "#", "tile", "prod", "auto_tiles", "contig B", "segments", "qualified", "verdict", "µs"):
            table.add_column(col, key=col or "mark")
        super().on_mount()

    # ------------------------------------------------------------------ refresh
    def prepare(self) -> None:
        super().prepare()
        pipe = self.session.step_pipeline
        pipe.geometry()
        pipe.tile_plan()
        pipe.tile_choices()
        attempt(pipe.cube_choice)

    def refresh_step(self) -> None:
        geometry, err = attempt(self.session.step_pipeline.geometry)
        needs = attempt(self.session.step_pipeline.needs)[0] if geometry is not None else None
        what = "kernel shape"
        if geometry is not None and needs is not None and needs.tiles and needs.tiles[0].shape != geometry.shape:
            # the pattern tiles another tensor than the kernel's input (a conv's column buffer)
            main = needs.tiles[0]
            geometry = replace(geometry, shape=main.shape, reduce_dim=main.reduce_dim)
            what = main.name
        if geometry is None:
            self._geometry = None
            self.query_one("#tile-shape", Static).update("")
            self.query_one("#tile-fields").remove_children()
            self.set_status(err or "no geometry", "error")
            return
        self._plan, perr = attempt(lambda: self.session.step_pipeline.tile_plan())
        choices = attempt(self.session.step_pipeline.tile_choices)[0] if self._plan is not None else None
        self._choice = choices[0] if choices else None
        tile = self._choice.tile if self._choice is not None else None
        if geometry != self._geometry:
            self._geometry = geometry
            self._times = {}
            self._build_fields(geometry, tile)
        elif tile is not None:
            self._set_fields(tile)
        rd = f", reduce dim {geometry.reduce_dim}" if geometry.reduce_dim is not None else ""
        self.query_one("#tile-shape", Static).update(
            f"{what} {dims_text(geometry.shape)} {geometry.dtype}{rd}")
        self._fill_table()
        rec = self._plan.recommended if self._plan is not None else None
        why = self.query_one("#tile-why", Static)
        if rec is not None:
            why.update(Content.assemble(("★ recommended ", "$text-success bold"), (dims_text(rec.tile), "bold"), "\n",
                                        *[f"  · {r}\n" for r in rec.reasons],
                                        *[(f"  {n}\n", "dim") for n in (self._plan.notes if self._plan else ())],
                                        *self._documents_pick()))
        else:
            why.update("")
        self.evaluate()
        self._refresh_cube(geometry)
        if perr:
            self.set_status(perr, "error")

    def _documents_pick(self) -> list[tuple[str, str]]:
        """When the estimate decides (ranking = "auto" or "estimate"), the documents' pick beside it:
        its rules and how much slower the estimate expects it."""
        plan = self._plan
        if plan is None or plan.ranking != "estimate" or plan.best_by_rules is None:
            return []
        d = plan.to_dict()
        loss = plan.rules_pick_loss()
        line = f"  documents' pick {dims_text(plan.best_by_rules.tile)} ({', '.join(d['rules_pick_rules'])})"
        line += f": the estimate expects {loss:.2f}x this time\n" if loss else "\n"
        return [(line, "$text-warning"), (f"  {plan.ranking_note}\n", "dim")]

    def _build_fields(self, g: Geometry, tile: tuple[int, ...] | None) -> None:
        """One field per axis, created with the tile's values (the old ones leave asynchronously,
        so the new ones are kept in a list rather than found by a query).

        The fields already on screen are kept for the axes they can hold (relabelled, given the new
        values) and only the axes past them are added or removed: moving between the kernels of a
        chain otherwise remounted every field and moved the focus twice, each move redrawing the
        footer, which made the Tiles step several times slower to switch than the others."""
        box = self.query_one("#tile-fields", Horizontal)
        old = list(self._fields or [])
        on_screen = bool(old) and all(f.is_attached and f.parent is not None for f in old)
        keep = old[:len(g.shape)] if on_screen else []
        gone = [f.parent for f in old[len(keep):] if isinstance(f.parent, Widget)] if on_screen else []
        values = [str(t) for t in tile] if tile is not None and len(tile) == len(g.shape) else [""] * len(g.shape)
        columns = []
        self._fields = list(keep)
        for i in range(len(g.shape)):
            label = _axis_label(g, i)
            if i < len(keep):  # on screen: relabelled in place
                f = keep[i]
                col = f.parent
                assert col is not None
                col.query_one(".axis-label", Label).update(label)
                if f.value != values[i]:
                    with self.prevent(Input.Changed):
                        f.value = values[i]
            else:
                f = Field(values[i], id=f"tile-{i}", classes="tile-field", placeholder="size")
                self._fields.append(f)
                col = Vertical(Label(label, classes="axis-label"), f, classes="axis-col")
                columns.append(col)
            f.tooltip = f"tile size on axis {i} (axis length {g.shape[i]})"
            col.styles.width = max(11, len(label) + 1)  # four axes must fit beside the findings
        if on_screen and not gone and not columns:
            return
        if any(self.focused is f for f in old[len(keep):]) and keep:
            keep[0].focus()  # the focused axis goes away: one move, to the first axis

        async def swap() -> None:
            if on_screen:
                for col in gone:
                    await col.remove()
            else:
                await box.remove_children()  # first, so the new fields can reuse the ids
            if columns:
                await box.mount(*columns)
            if self._fields and (self.focused is None or not self.focused.has_class("tile-field")):
                self._fields[0].focus()

        self.call_later(swap)

    def tile_fields(self) -> list[Input]:
        """The fields of the current shape (kept in a list: a DOM query per keystroke costs ms)."""
        return list(self._fields or [])

    def _set_fields(self, tile: tuple[int, ...]) -> None:
        fields = self.tile_fields()
        if len(fields) != len(tile):
            return
        with self.prevent(Input.Changed):
            for f, v in zip(fields, tile, strict=True):
                if f.value != str(v):
                    f.value = str(v)

    def _fill_table(self) -> None:
        plan = self._plan
        sig = (id(plan), self.session.step_pipeline.chosen_tile() if plan is not None else None,
               tuple(sorted(self._times.items())))
        if sig == self._table_sig:
            return  # unchanged: rebuilding the table would repaint it for nothing
        self._table_sig = sig
        table = self.query_one("#candidates", DataTable)
        table.clear()
        if plan is None:
            return
        chosen = self.session.step_pipeline.chosen_tile()
        for c in plan.candidates:
            e = c.evaluation
            mark = ("▶" if e.tile == chosen else "") + ("★" if plan.recommended is c else "")
            t = self._times.get(e.tile)
            table.add_row(
                mark, str(c.rank + 1), dims_text(e.tile), str(e.prod), str(e.auto_tiles),
                str(e.contiguous_bytes), "-" if e.reduce_segments is None else str(e.reduce_segments),
                "yes" if c.qualified else "no",
                level_content(worst(f for f in e.findings if f.level != "info")),
                "" if e.tile not in self._times else ("fail" if t is None else f"{t:.1f}"),
                key="x".join(map(str, e.tile)),
            )
        table.border_subtitle = (f"{plan.qualified_count} qualified of {plan.enumerated} enumerated"
                                 + ("; none reach 1 KB, shown by the fallback order" if plan.below_1kb_fallback
                                    else ""))

    # ------------------------------------------------------------------ live checks
    def evaluate(self) -> TileEvaluation | None:
        """Parse the fields, evaluate the tile, show numbers and findings (the keystroke path)."""
        g = self._geometry
        if g is None:
            return None
        fields = self.tile_fields()
        values: list[int] = []
        error: str | None = None
        for i, f in enumerate(fields):
            text = f.value.strip()
            bad = None
            if not text:
                bad = f"axis {i}: give a tile size (1..{g.shape[i]} or more)"
            else:
                bad = _tile_size_problem(text, i, g.shape[i])
                if bad is None:
                    values.append(int(text))
            if f.has_class("-bad") != (bad is not None):
                f.set_class(bad is not None, "-bad")
            error = error or bad
        ev: TileEvaluation | None = None
        choice = self._choice
        if error is None:
            try:
                if choice is not None:
                    role = choice.role
                    ev = evaluate_tile(self.session.kb, role.shape, role.dtype, values, role.reduce_dim, role.reducing,
                                       role.strict_align)
                else:
                    ev = evaluate_tile(self.session.kb, g.shape, g.dtype, values, g.reduce_dim)
            except InputError as exc:
                error = str(exc)
        self.last_error = error
        self.last_evaluation = ev
        self._put("#tile-error", f"✗ {error}" if error else "")
        findings = self.query_one("#findings", FindingsList)
        if ev is None:
            self._put("#tile-metrics", "")
            findings.show((), empty="not evaluated: fix the tile size first")
            self.set_status(error or "", "error")
            return None
        self._put(
            "#tile-metrics",
            f"prod {ev.prod}   auto_tiles {ev.auto_tiles}   contiguous {ev.contiguous_bytes} B\n"
            f"reduce segments {ev.reduce_segments if ev.reduce_segments is not None else '-'}   "
            f"UB ~{ev.ub_bytes} B   loop needed: {'yes' if ev.needs_loop else 'no'}   "
            f"waste: {', '.join(f'axis {a}' for a in ev.waste_axes) or 'none'}",
        )
        # The kernel uses the tile step's choice: show how it was made (a step-down) beside the checks.
        shown = list(ev.findings) + (list(choice.findings) if choice is not None and choice.tile == ev.tile else [])
        findings.show(shown)
        lvl = worst(shown)
        self.set_status(
            {"error": "the tile breaks a hard limit: fix it or pick a candidate",
             "warn": "the tile works but breaks a rule of thumb (see the findings)",
             "info": "tile OK", "ok": "tile OK"}[lvl], "error" if lvl == "error" else lvl)
        tile = list(ev.tile)
        if self.session.step_pipeline.design.tile != tile:
            # With no decision stored, the tile step's own choice is on screen: keep it undecided.
            rec = choice.tile if choice is not None and choice.source != "user" else None

            def set_tile(d: Design) -> None:
                d.tile = None if (d.tile is None and tuple(tile) == rec) else tile

            self.session.change("tiles", set_tile)
        return ev

    def _put(self, selector: str, text: str) -> None:
        """Update a fixed-height line only when its text changes, without a layout pass."""
        if self._shown.get(selector) != text:
            self._shown[selector] = text
            self.query_one(selector, Static).update(text, layout=False)

    @on(Input.Changed, ".tile-field")
    def _tile_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.evaluate()

    @on(FindingsList.Selected)
    def _finding_selected(self, event: FindingsList.Selected) -> None:
        event.stop()
        self.query_one("#explain", RuleExplanation).explain(self.session.kb, event.finding)

    @on(DataTable.RowSelected, "#candidates")
    def _candidate_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if not key:
            return
        tile = tuple(int(x) for x in key.split("x"))
        self._set_fields(tile)
        self.evaluate()
        self._fill_table()
        self.notify(f"tile {dims_text(tile)}", title="Tile chosen")

    def action_use_recommended(self) -> None:
        """Back to the pack's recommendation: stored as no decision, so it follows later changes."""
        if self._plan is None or self._plan.recommended is None:
            return

        def clear(d: Design) -> None:
            d.tile = None

        self.session.change("tiles", clear)
        self._choice = (attempt(self.session.step_pipeline.tile_choices)[0] or (None,))[0]
        self._set_fields(self._choice.tile if self._choice is not None else self._plan.recommended.tile)
        self.evaluate()
        self._fill_table()

    # ------------------------------------------------------------------ cube tiles
    def _refresh_cube(self, g: Geometry) -> None:
        box = self.query_one("#cube-box")
        box.display = g.matmul is not None
        if g.matmul is None:
            return
        # The cube tiles the kernel will use: the design's, else the tile step's choice. Shown, never
        # written into the design until the user edits a field.
        choice, _ = attempt(self.session.step_pipeline.cube_choice)
        self._cube_source = choice.source if choice is not None else ""
        cube = self.session.step_pipeline.design.cube or (
            {"m": list(choice.evaluation.m), "k": list(choice.evaluation.k), "n": list(choice.evaluation.n)}
            if choice is not None else {"m": [16, 16], "k": [16, 16], "n": [16, 16]})
        with self.prevent(Input.Changed):
            for name in ("m", "k", "n"):
                self.query_one(f"#cube-{name}", Input).value = ",".join(map(str, cube[name]))
        self.evaluate_cube(record=False)

    def evaluate_cube(self, record: bool = True) -> None:
        """Check the cube fields live; `record` writes them into the design (a user's edit)."""
        g = self._geometry
        if g is None or g.matmul is None:
            return
        err = self.query_one("#cube-error", Static)
        parts: dict[str, list[int]] = {}
        try:
            for name in ("m", "k", "n"):
                parts[name] = list(parse_dims(self.query_one(f"#cube-{name}", Input).value, f"cube {name}"))
            M, K, N = g.matmul
            ev = evaluate_cube(self.session.kb, M, K, N, g.dtype, parts["m"], parts["k"], parts["n"])
        except InputError as exc:
            err.update(f"✗ {exc}")
            self.query_one("#cube-findings", FindingsList).show(())
            return
        if record:
            self._cube_source = "the design's cube tiles"
        err.update(f"L0A {ev.l0a_bytes} B · L0B {ev.l0b_bytes} B · L0C {ev.l0c_bytes} B · "
                   f"L1 {ev.l1_bytes} B · {ev.tasks} cube tasks"
                   + (f"\nfrom {self._cube_source}" if self._cube_source else ""))
        self.query_one("#cube-findings", FindingsList).show(ev.findings)
        if record and self.session.step_pipeline.design.cube != parts:
            def set_cube(d: Design) -> None:
                d.cube = parts

            self.session.change("tiles", set_cube)

    @on(Input.Changed, ".cube-field")
    def _cube_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.evaluate_cube()

    # ------------------------------------------------------------------ navigation / sim
    def next_blocked(self) -> str | None:
        if self._geometry is None:
            return "the kernel shape is unknown: finish the contract and dimension steps"
        if self.last_error:
            return f"tile: {self.last_error}"
        ev = self.last_evaluation
        if ev is not None and not ev.ok:
            bad = ", ".join(sorted({f.rule for f in ev.findings if f.level == "error"}))
            return f"the tile has error-level findings ({bad}): fix them or pick a candidate"
        return None

    def sim_results(self, report: Any) -> None:
        """Times into the table, and the sweep's verdict beside the rules' (never one hidden)."""
        self._times.update({tuple(r.value): r.e2e_us for r in report.rows if r.measured})
        self._table_sig = None
        self._fill_table()
        box = self.query_one("#sim-report", Static)
        box.update("\n".join([*sweep_summary(report), *roofline_summary(self.session.step_pipeline, report)]))
        box.display = True
        cost = report.best_by_cost
        self.set_status(f"simulated {report.simulations} candidate(s)"
                        + (f": fastest {cost.label} at {cost.e2e_us:.2f} µs" if cost else ""), "ok")
