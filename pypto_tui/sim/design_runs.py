"""The compiler in the loop for a whole design: cost sweeps and verification of generated kernels.

This is where the pure design pipeline meets the subprocess runner: every candidate (a tile or a
loop count) becomes a design variant, the code generator turns it into a module, and the runner
compiles it in SIM mode in its own process. Verification rebuilds the design at reduced shapes
(same rank, tiles clamped to the smaller axes, the same loop structure) so the interpreter's
memory stays small, and runs the task's torch baseline on the same inputs.

The sweeps follow the documents: filter by the rules, measure the qualified candidates from the
middle of a log scale outwards, stop when both sides get worse. A few candidates the rules reject
are measured too, so a disagreement between the cost model and a rule is shown, never hidden.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pypto_tui.design import Pipeline
from pypto_tui.errors import InputError
from pypto_tui.findings import Finding, cites
from pypto_tui.sim import jobs as J
from pypto_tui.sim.sweep import guided_sweep_batched

Progress = Callable[[int, int, J.SimResult], None]
VERIFY_ELEMENTS = 1 << 16
MIN_LAST = 32


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


@dataclass
class VerifyReport:
    supported: bool
    passed: bool
    reason: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    fail_share: float | None = None
    shapes: dict[str, list[int]] = field(default_factory=dict)
    scale: str = "small"
    tile: list[int] | None = None
    loop_count: int | None = None
    status: str | None = None
    wall_s: float | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["findings"] = [f.to_dict() for f in self.findings]
        return d


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
                 total_hint: int, jobs: int, timeout_s: float, cache: bool, progress: Progress | None) -> None:
        self.make_job, self.row_of, self.total_hint = make_job, row_of, total_hint
        self.jobs, self.timeout_s, self.cache, self.progress = jobs, timeout_s, cache, progress
        self.done = 0

    def _tick(self, _done: int, _total: int, result: J.SimResult) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, max(self.total_hint, self.done), result)

    def __call__(self, batch: Sequence[Any]) -> list[float | None]:
        from pypto_tui.sim.runner import run_many

        results = run_many([self.make_job(c) for c in batch], jobs=self.jobs, timeout_s=self.timeout_s,
                           progress=self._tick, cache=self.cache)
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
                timeout_s: float = 300.0, progress: Progress | None = None, cache: bool = True) -> SweepReport:
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
        progress=progress)
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
                progress: Progress | None = None, cache: bool = True) -> SweepReport:
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
                        progress=progress)

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


# ------------------------------------------------------------------------------ verification
def reduced_shapes(pipeline: Pipeline, budget: int = VERIFY_ELEMENTS) -> dict[str, tuple[int, ...]]:
    """Smaller shapes of the same rank: halve the largest free axis until the biggest input fits.

    Distinct sizes stay distinct (M != K keeps a transposed operand detectable).
    Sizes a module is built for (norm channels, normalized shapes, group counts) are kept, and the
    last axis stays >= 32 elements so 32-byte aligned tiles and 1 KB moves still make sense.
    """
    from pypto_tui.contract.selfcheck import _keep_values

    c = pipeline.contract()
    keep = _keep_values(c)
    groups = c.op_args.get("num_groups") or c.attributes.get("num_groups")
    shapes = {i.name: list(i.shape) for i in c.tensor_inputs if i.shape is not None}
    mapping: dict[int, int] = {}
    values = sorted({d for s in shapes.values() for d in s}, reverse=True)

    def largest() -> int:
        return max((math.prod(mapping.get(d, d) for d in s) for s in shapes.values()), default=0)

    while largest() > budget:
        changed = False
        for v in sorted(values, key=lambda d: -mapping.get(d, d)):  # type: ignore[operator]
            cur = mapping.get(v, v)
            floor = MIN_LAST if any(s and s[-1] == v for s in shapes.values()) else 2
            if v in keep:
                continue
            taken = {mapping.get(o, o) for o in values if o != v}
            for new in (cur // 2, cur // 4):  # distinct sizes stay distinct: a swapped axis shows
                if cur % (cur // new if new else 1) or new < floor or new in taken:
                    continue
                if isinstance(groups, int) and groups > 1 and new % groups and v % groups == 0:
                    continue
                mapping[v] = new
                changed = True
                break
            if changed:
                break
        if not changed:
            break
    return {n: tuple(mapping.get(d, d) for d in s) for n, s in shapes.items()}


@dataclass
class PreparedVerify:
    """A verification ready to run: the job, or the report that says why there is none."""

    job: J.SimJob | None
    report: VerifyReport
    test: Pipeline | None = None


def prepare_verify(pipeline: Pipeline, *, scale: str = "small",
                   memory_limit_mb: int | None = None) -> PreparedVerify:
    """The design at test shapes (same rank, tiles clamped, same loop structure) and its job."""
    if scale not in ("small", "full"):
        raise InputError(f"--scale {scale!r}: use small or full")
    c = pipeline.contract()
    if not c.supported:
        return PreparedVerify(None, VerifyReport(False, False, c.reason or "this task cannot be scaffolded"))
    if scale == "small":
        full_loop = pipeline.chosen_loop_count()
        shapes = reduced_shapes(pipeline)
        edits = dict(pipeline.design.contract_edits)
        for name, s in shapes.items():
            edits[f"inputs.{name}.shape"] = list(s)
        test = Pipeline(pipeline.kb, replace(pipeline.design, contract_edits=edits, tile=None, loop_count=None))
        tile = _clamped_tile(pipeline, test)
        loop = max(1, min(full_loop, test.geometry().shape[0])) if full_loop else None
        test = Pipeline(pipeline.kb, replace(test.design, tile=list(tile) if tile else None, loop_count=loop))
    else:
        test = pipeline
        shapes = {i.name: tuple(i.shape) for i in c.tensor_inputs if i.shape is not None}
    report = VerifyReport(False, False, "", shapes={k: list(v) for k, v in shapes.items()}, scale=scale)
    try:
        gen = _generated(test)
    except InputError as exc:
        report.reason = str(exc)
        return PreparedVerify(None, report)
    if not gen.supported:
        report.reason = gen.reason
        return PreparedVerify(None, report)
    report.supported = True
    report.tile = list(test.chosen_tile() or []) or None
    report.loop_count = test.chosen_loop_count()
    job = J.SimJob(kind="verify", kernel_source=gen.source, inputs=tuple(input_specs(test, with_recipe=True)),
                   init_args=tuple(init_args(test)), label=Path(str(pipeline.design.task)).name,
                   task_file=str(pipeline.design.task), cycles_per_us=float(pipeline.kb.chip.cycles_per_us),
                   memory_limit_mb=memory_limit_mb or J.DEFAULT_MEMORY_LIMIT_MB)
    return PreparedVerify(job, report, test)


def finish_verify(prepared: PreparedVerify, r: J.SimResult) -> VerifyReport:
    """Fold the worker's result into the report: the worst output decides."""
    report = replace(prepared.report)
    worst = _worst_output(r.outputs)
    report.passed = bool(r.ok and r.passed)
    report.reason = str("the kernel matches the torch baseline" if report.passed else
                        (worst.get("reason") if worst else None) or r.reason or r.error or r.status)
    report.status, report.wall_s, report.outputs = r.status, r.wall_s, r.outputs
    if worst:
        report.max_abs_err, report.max_rel_err = worst.get("max_abs_err"), worst.get("max_rel_err")
        report.fail_share = worst.get("fail_share")
    return report


def verify_many(pipelines: Sequence[Pipeline], *, scale: str = "small", jobs: int = 2, timeout_s: float = 600.0,
                cache: bool = True, memory_limit_mb: int | None = None,
                progress: Progress | None = None) -> list[VerifyReport]:
    """Verify several designs, their workers running in parallel up to `jobs`."""
    from pypto_tui.sim.runner import run_many

    prepared = [prepare_verify(p, scale=scale, memory_limit_mb=memory_limit_mb) for p in pipelines]
    runnable = [x for x in prepared if x.job is not None]
    results = iter(run_many([x.job for x in runnable if x.job], jobs=jobs, timeout_s=timeout_s, cache=cache,
                            progress=progress)) if runnable else iter(())
    return [finish_verify(x, next(results)) if x.job is not None else x.report for x in prepared]


def verify(pipeline: Pipeline, *, scale: str = "small", timeout_s: float = 600.0, cache: bool = True,
           memory_limit_mb: int | None = None, progress: Progress | None = None) -> VerifyReport:
    """Build the kernel at test shapes, run it through the interpreter and compare with torch."""
    return verify_many([pipeline], scale=scale, jobs=1, timeout_s=timeout_s, cache=cache,
                       memory_limit_mb=memory_limit_mb, progress=progress)[0]


def _generated(p: Pipeline) -> Any:
    from pypto_tui.design import kernel_of

    return kernel_of(p)


def _clamped_tile(full: Pipeline, test: Pipeline) -> tuple[int, ...] | None:
    """The design's tile, each axis cut to the smaller shape (the last kept 32-byte aligned)."""
    from pypto_tui.tiles import align_unit

    tile = full.chosen_tile()
    if tile is None:
        return None
    role = test.needs().tiles[0]  # the tensor the tile is for (a matvec's A, not its (m, 1) output)
    if len(role.shape) != len(tile):
        return None
    unit = align_unit(test.kb, role.dtype)
    out = [min(t, s) for t, s in zip(tile, role.shape, strict=True)]
    if out[-1] % unit:
        out[-1] = max(unit, (out[-1] // unit) * unit)
    return tuple(out)


def _worst_output(outputs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not outputs:
        return None
    return max(outputs, key=lambda o: (not o.get("passed", False), o.get("fail_share") or 0.0,
                                       o.get("max_rel_err") or 0.0))
