"""The compiler in the loop for a whole design: cost sweeps (verification is verification.py).

This is where the pure design pipeline meets the subprocess runner: every candidate (a tile or a
loop count) becomes a design variant, the code generator turns it into a module, and the runner
compiles it in SIM mode in its own process.

The sweeps follow the documents: filter by the rules, measure the qualified candidates from the
middle of a log scale outwards, stop when both sides get worse. A few candidates the rules reject
are measured too, so a disagreement between the cost model and a rule is shown, never hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pypto_tui.design import Pipeline
from pypto_tui.errors import InputError
from pypto_tui.findings import cites
from pypto_tui.sim import jobs as J
from pypto_tui.sim.sweep import guided_sweep_batched

Progress = Callable[[int, int, J.SimResult], None]
Status = Callable[[J.SimJob, str], None]


@dataclass
class SweepRow:
    label: str
    value: Any                      # the tile (list) or the loop count
    rule_rank: int | None
    qualified: bool
    rule_verdict: str
    measured: bool = False
    status: str | None = None
    e2e_us: float | None = None
    tasks: int | None = None
    compile_s: float | None = None
    wall_s: float | None = None
    reason: str | None = None
    cost_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class SweepReport:
    sweep: str                      # "tiles" | "loops"
    rows: list[SweepRow]
    qualified: int
    simulations: int
    best_by_rules: SweepRow | None
    best_by_cost: SweepRow | None
    best_qualified: SweepRow | None = None
    disagreements: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep, "qualified": self.qualified, "simulations": self.simulations,
            "candidates": [r.to_dict() for r in self.rows],
            "best_by_rules": self.best_by_rules.to_dict() if self.best_by_rules else None,
            "best_by_cost": self.best_by_cost.to_dict() if self.best_by_cost else None,
            "best_qualified": self.best_qualified.to_dict() if self.best_qualified else None,
            "disagreements": self.disagreements, "notes": self.notes,
        }


# ------------------------------------------------------------------------------ jobs from designs
def _plain(v: Any) -> Any:
    if isinstance(v, dict) or hasattr(v, "items"):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return v


def input_specs(pipeline: Pipeline, fill: str | None = None, with_recipe: bool = False) -> list[J.InputSpec]:
    """forward()'s arguments as the worker builds them: tensors by shape/dtype, scalars by value."""
    specs: list[J.InputSpec] = []
    for i in pipeline.contract().inputs:
        if not i.is_tensor:
            if i.value is None:
                raise InputError(f"scalar input '{i.name}' has no value: fill it in the contract")
            specs.append(J.InputSpec(scalar=i.value))
            continue
        if i.shape is None:
            raise InputError(f"input '{i.name}' has no shape: fill it in the contract")
        recipe = None
        if with_recipe and i.recipe and i.recipe.get("replayable", True):
            recipe = _plain(i.recipe)
            recipe["shape"] = list(i.shape)
        specs.append(J.InputSpec(shape=tuple(i.shape), dtype=i.dtype or "fp32", fill=fill, recipe=recipe))
    return specs


def init_args(pipeline: Pipeline) -> list[Any]:
    return [_plain(v) for v in pipeline.contract().init_params.values()]


def kernel_source(pipeline: Pipeline) -> str:
    from pypto_tui.design import kernel_of

    k = kernel_of(pipeline)
    if not k.supported:
        raise InputError(f"cannot scaffold this task: {k.reason}")
    return str(k.source)


def variant(pipeline: Pipeline, **changes: Any) -> Pipeline:
    """The same design with some decisions changed (a tile, a loop count), as a fresh pipeline."""
    return Pipeline(pipeline.kb, replace(pipeline.design, **changes))


def cost_job(pipeline: Pipeline, label: str) -> J.SimJob:
    # The cost model does not look at the data: zeros are the cheapest inputs to build.
    return J.SimJob(kind="cost", kernel_source=kernel_source(pipeline), inputs=tuple(input_specs(pipeline, "zeros")),
                    init_args=tuple(init_args(pipeline)), label=label,
                    cycles_per_us=float(pipeline.kb.chip.cycles_per_us))


# ------------------------------------------------------------------------------ sweeps
class _Measurer:
    """Compiles a batch of candidates in parallel, fills their rows, counts the simulations and
    reports progress: the one measure function both sweeps hand to the guided search."""

    def __init__(self, make_job: Callable[[Any], J.SimJob], row_of: Callable[[Any], SweepRow], *,
                 total_hint: int, jobs: int, timeout_s: float, cache: bool, progress: Progress | None,
                 status: Status | None = None) -> None:
        self.make_job, self.row_of, self.total_hint = make_job, row_of, total_hint
        self.jobs, self.timeout_s, self.cache, self.progress = jobs, timeout_s, cache, progress
        self.status = status
        self.done = 0

    def _tick(self, _done: int, _total: int, result: J.SimResult) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, max(self.total_hint, self.done), result)

    def __call__(self, batch: Sequence[Any]) -> list[float | None]:
        from pypto_tui.sim.runner import run_many

        results = run_many([self.make_job(c) for c in batch], jobs=self.jobs, timeout_s=self.timeout_s,
                           progress=self._tick, cache=self.cache, status=self.status)
        for c, r in zip(batch, results, strict=True):
            _fill(self.row_of(c), r)
        return [r.e2e_us if r.ok else None for r in results]


def _rule_verdict(c: Any) -> str:
    if c.qualified:
        return f"qualified (#{c.rank + 1} by the rules)"
    bad = [f.rule for f in c.evaluation.findings if f.level in ("warn", "error")]
    return "rejected: " + (", ".join(dict.fromkeys(bad)) or "ranked low")


def sweep_line(plan: Any, pick: tuple[int, ...] | None) -> tuple[int, list[Any]]:
    """The qualified tiles on the line through the rules' pick that varies one axis (the reduce
    axis, else the last): the documents' 16 -> 32 -> 64 search is a walk along that line."""
    qualified = [c for c in plan.candidates if c.qualified]
    if pick is None or not qualified:
        return -1, qualified
    axis = plan.reduce_dim if plan.reduce_dim is not None else len(pick) - 1
    line = [c for c in qualified if all(t == p for i, (t, p) in enumerate(zip(c.tile, pick, strict=True))
                                        if i != axis)]
    return axis, sorted(line, key=lambda c: c.tile[axis])


def sweep_tiles(pipeline: Pipeline, *, budget: int = 8, challengers: int = 2, jobs: int = 2,
                timeout_s: float = 300.0, progress: Progress | None = None, cache: bool = True,
                status: Status | None = None) -> SweepReport:
    """Walk the sweep line from its middle (guided), then measure the rules' pick and a few
    candidates the rules reject, so both verdicts stand side by side."""

    plan = pipeline.tile_plan(top=400)
    pick = pipeline.chosen_tile()
    axis, line = sweep_line(plan, pick)
    qualified = [c for c in plan.candidates if c.qualified]
    rejected = sorted((c for c in plan.candidates if not c.qualified and not c.evaluation.waste_axes),
                      key=lambda c: (c.evaluation.reduce_segments or 1, -c.evaluation.prod, c.rank))[:challengers]
    by_tile = {c.tile: c for c in plan.candidates}
    rows: dict[tuple[int, ...], SweepRow] = {
        c.tile: SweepRow(str(tuple(c.tile)), list(c.tile), c.rank, c.qualified, _rule_verdict(c))
        for c in [*line, *rejected]}
    measure = _Measurer(
        lambda c: cost_job(variant(pipeline, tile=list(c.tile)), str(tuple(c.tile))),
        lambda c: rows.setdefault(c.tile, SweepRow(str(tuple(c.tile)), list(c.tile), c.rank, c.qualified,
                                                   _rule_verdict(c))),
        total_hint=min(budget, len(line)) + len(rejected) + 1, jobs=jobs, timeout_s=timeout_s, cache=cache,
        progress=progress, status=status)
    result = guided_sweep_batched(line, measure, max_measurements=budget) if line else None
    extra = [c for c in rejected if not rows[c.tile].measured]
    if pick is not None and pick in by_tile and not (pick in rows and rows[pick].measured):
        extra.insert(0, by_tile[pick])
    if extra:
        measure(extra)
    stepped = _ub_step_down(pipeline, plan, rows, pick, measure)
    report = _report("tiles", rows, len(qualified), measure.done, pick, result)
    if stepped:
        report.notes.append(stepped)
    if axis >= 0:
        report.notes.insert(0, f"sweep line: axis {axis} varied through the rules' pick {tuple(pick or ())} "
                               f"({len(line)} qualified tiles on it)")
    return report


def _ub_step_down(pipeline: Pipeline, plan: Any, rows: dict[tuple[int, ...], SweepRow],
                  pick: tuple[int, ...] | None, measure: Callable[[Sequence[Any]], list[float | None]]) -> str:
    """O1.ub-step-down: when the pick fails to compile, try the best qualified tile at each lower
    rung of the prod ladder (16384 -> 8192 -> 4096) until one compiles."""
    row = rows.get(tuple(pick)) if pick else None
    if row is None or row.status != J.COMPILE_ERROR:
        return ""
    prod = math.prod(pick or ())
    for rung in pipeline.kb.ladders.ub_step_down:
        if rung >= prod:
            continue
        cand = next((c for c in plan.candidates if c.qualified and c.evaluation.prod <= rung), None)
        if cand is None:
            continue
        if cand.tile not in rows or not rows[cand.tile].measured:
            measure([cand])
        if rows[cand.tile].status == J.OK:
            return (f"{row.label} did not compile ({row.reason or row.status}); stepped prod(tile) down to "
                    f"{rung}: {rows[cand.tile].label} compiles (O1.ub-step-down)")
    return f"{row.label} did not compile and no step down the prod ladder compiled either (O1.ub-step-down)"


@cites("O1.measure-candidates", "O2.sweep-points", "O1.ub-step-down", "CL.two-tiles-measured", "CL.loop-sweep")
def sweep(pipeline: Pipeline, kind: str, **options: Any) -> list[SweepReport]:
    """The measured search the documents ask for: tiles (>= 2 measured, the reduce-axis sweet spot),
    loop counts (>= 3 points, both ends examined), or both."""
    if kind not in ("tiles", "loops", "both"):
        raise InputError(f"--sweep {kind!r}: use tiles, loops or both")
    out = []
    if kind in ("tiles", "both"):
        out.append(sweep_tiles(pipeline, **options))
    if kind in ("loops", "both"):
        options.pop("challengers", None)
        out.append(sweep_loops(pipeline, **options))
    return out


def sweep_loops(pipeline: Pipeline, *, budget: int = 6, jobs: int = 2, timeout_s: float = 300.0,
                progress: Progress | None = None, cache: bool = True, status: Status | None = None) -> SweepReport:
    """Measure loop counts from the middle of the log scale outwards (O2)."""

    plan = pipeline.loop_plan()
    if plan is None:
        raise InputError("no tile chosen: pick a tile before sweeping loop counts")
    counts = sorted({c.loop_count for c in plan.candidates if c.ok and c.loop_count <= plan.total})
    qualified = [c for c in counts if c > 1] or counts
    rows: dict[tuple[int, ...], SweepRow] = {}
    for position, cand in enumerate(plan.candidates):
        if cand.loop_count not in qualified:
            continue
        ring = pipeline.kb.ladders.loop_ring_of(cand.loop_count)
        where = f"ring {ring + 1} of the log scale" if ring is not None else "off the ladder"
        rows[(cand.loop_count,)] = SweepRow(f"loop_count {cand.loop_count}", cand.loop_count, position, True,
                                            f"{where}, BASIC_BATCH {cand.basic_batch}")
    measure = _Measurer(lambda n: cost_job(variant(pipeline, loop_count=n), f"loop_count {n}"),
                        lambda n: rows[(n,)], total_hint=budget, jobs=jobs, timeout_s=timeout_s, cache=cache,
                        progress=progress, status=status)

    result = guided_sweep_batched(qualified, measure, max_measurements=budget) if qualified else None
    rec = plan.recommended.loop_count if plan.recommended else None
    report = _report("loops", rows, len(qualified), measure.done, (rec,) if rec else None, result)
    if not plan.needs_loop:
        report.notes.append(f"no loop is needed ({plan.reason}); the sweep forces one to compare")
    return report


def _fill(row: SweepRow, r: J.SimResult) -> None:
    row.measured = True
    row.status, row.e2e_us, row.tasks = r.status, r.e2e_us, r.tasks
    row.compile_s, row.wall_s = r.compile_s, r.wall_s
    row.reason = r.reason or r.error


def _report(kind: str, rows: dict[tuple[int, ...], SweepRow], qualified: int, simulations: int,
            rules_key: tuple[int, ...] | None, result: Any) -> SweepReport:
    measured = sorted((r for r in rows.values() if r.measured and r.e2e_us is not None), key=lambda r: r.e2e_us or 0.0)
    for i, r in enumerate(measured):
        r.cost_rank = i
    ordered = sorted(rows.values(), key=lambda r: (not r.measured, r.rule_rank if r.rule_rank is not None else 1e9))
    best_rules = rows.get(tuple(rules_key)) if rules_key else None
    best_cost = measured[0] if measured else None
    best_ok = next((r for r in measured if r.qualified), None)
    report = SweepReport(kind, [r for r in ordered if r.measured] + [r for r in ordered if not r.measured],
                         qualified, simulations, best_rules, best_cost, best_ok)
    if best_cost is not None and best_rules is not None and best_cost is not best_rules:
        if best_rules.e2e_us is None:
            report.disagreements.append(f"the rules pick {best_rules.label} (not measured); the cost model's "
                                        f"fastest is {best_cost.label} at {best_cost.e2e_us:.2f} us")
        else:
            report.disagreements.append(
                f"the cost model prefers {best_cost.label} ({best_cost.e2e_us:.2f} us, {best_cost.rule_verdict}) "
                f"over the rules' pick {best_rules.label} ({best_rules.e2e_us:.2f} us)")
    for r in measured:
        if not r.qualified and best_cost is r:
            report.notes.append(f"{r.label} is fastest in the cost model but {r.rule_verdict}: "
                                "the rules target the NPU's memory moves, which the cost model may not weigh")
    if result is not None:
        report.notes.append(f"guided sweep: {simulations} simulation(s) for {qualified} qualified candidate(s)")
    return report
