"""The compiler in the loop for a whole design: cost sweeps (verification is verification.py).

This is where the pure design pipeline meets the subprocess runner: every candidate (a tile or a
loop count) becomes a design variant, the code generator turns it into a module, and the runner
compiles it in SIM mode in its own process.

The sweeps filter by the rules, then measure qualified candidates in one of three ways:
- guided by the cost estimate (SIM.cost-estimate), when the pack has one for the family: in the
  estimate's order, stopping once no candidate left could win (sweep.estimate_guided_sweep);
- guided by the documents, otherwise: from the middle of a log scale outwards, stopping when both
  sides get worse (sweep.guided_sweep_batched), and saying why the estimate was not used;
- exhaustively (`exhaustive=True`): every qualified candidate, the reference the others are
  judged by.
A few tiles the rules reject are measured too, so a disagreement between the cost model and a
rule is shown, never hidden. Before a sweep starts it forecasts its time (sim.timings, from past
compiles of the family), sizes its parallel jobs to the cores and the memory available, and it
stops cleanly when its StopSignal says so (the user cancelled, the time budget ran out).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pypto_tui.design import Pipeline
from pypto_tui.errors import InputError
from pypto_tui.findings import cites
from pypto_tui.kb import CostFit
from pypto_tui.sim import jobs as J
from pypto_tui.sim import timings
from pypto_tui.sim.sweep import SweepResult, estimate_guided_sweep, guided_sweep_batched
from pypto_tui.tiles import role_held_bytes

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
    estimate_us: float | None = None
    peak_rss_mb: float | None = None

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
    best_by_estimate: SweepRow | None = None
    mode: str = "guided"            # "estimate" (guided by the cost estimate), "guided" (the documents), "exhaustive"
    estimate: str = ""              # which fit priced the candidates, or why none did
    stopped: str = ""               # why the search stopped (or was stopped)
    forecast_s: float | None = None
    jobs: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep, "qualified": self.qualified, "simulations": self.simulations,
            "candidates": [r.to_dict() for r in self.rows],
            "best_by_rules": self.best_by_rules.to_dict() if self.best_by_rules else None,
            "best_by_cost": self.best_by_cost.to_dict() if self.best_by_cost else None,
            "best_qualified": self.best_qualified.to_dict() if self.best_qualified else None,
            "best_by_estimate": self.best_by_estimate.to_dict() if self.best_by_estimate else None,
            "disagreements": self.disagreements, "notes": self.notes,
            "mode": self.mode, "exhaustive": self.mode == "exhaustive", "estimate": self.estimate,
            "stopped": self.stopped, "forecast_s": self.forecast_s, "jobs": self.jobs,
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
    return pipeline.with_design(**changes)


def cost_job(pipeline: Pipeline, label: str) -> J.SimJob:
    # The cost model does not look at the data: zeros are the cheapest inputs to build.
    return J.SimJob(kind="cost", kernel_source=kernel_source(pipeline), inputs=tuple(input_specs(pipeline, "zeros")),
                    init_args=tuple(init_args(pipeline)), label=label,
                    cycles_per_us=float(pipeline.kb.chip.cycles_per_us))


def price_fusion(pipeline: Pipeline, *, jobs: int = 2, timeout_s: float = 300.0, cache: bool = True,
                 progress: Progress | None = None, status: Status | None = None) -> tuple[J.SimResult, dict[str, Any]]:
    """A chain's chosen plan and its unfused plan (every operator a kernel, each intermediate written
    and read back through global memory, which each kernel's simulated time includes), priced on the
    same simulator: (the chosen plan's result, the `fusion` document `sim --fusion compare` prints
    and bench_fusion.py tabulates: per plan its status, total and per-kernel µs and kernel count, and
    chosen / unfused)."""
    from pypto_tui.design import module_plan_of
    from pypto_tui.sim.runner import run_many

    plans = {"chosen": pipeline, "unfused": pipeline.unfused()}
    results = run_many([cost_job(q, name) for name, q in plans.items()], jobs=jobs, timeout_s=timeout_s,
                       progress=progress, status=status, cache=cache)
    doc: dict[str, Any] = {}
    for (name, q), r in zip(plans.items(), results, strict=True):
        planned = module_plan_of(q)
        doc[name] = {"status": r.status, "e2e_us": r.e2e_us, "kernels": len(planned[1].groups) if planned else 1,
                     "kernel_us": [k.get("e2e_us") for k in r.kernels], "reason": r.reason or r.error}
    a, b = doc["chosen"]["e2e_us"], doc["unfused"]["e2e_us"]
    doc["ratio"] = a / b if a and b else None
    return results[0], doc


def kernel_file_job(pipeline: Pipeline, path: Any) -> J.SimJob:
    """A cost job for any kernel module on disk (`sim TASK --kernel FILE`): the file is read
    statically first (it must define ModelNew taking the task's init arguments), then compiled in
    SIM mode with the task's inputs, like the generated kernel; every kernel it launches is timed."""
    from pathlib import Path

    from pypto_tui.sim.kernel_file import read_kernel_file

    args = init_args(pipeline)
    kfile = read_kernel_file(Path(path), len(args))
    return J.SimJob(kind="cost", kernel_source=kfile.source, inputs=tuple(input_specs(pipeline, "zeros")),
                    init_args=tuple(args), label=Path(path).name, cycles_per_us=float(pipeline.kb.chip.cycles_per_us))


# ------------------------------------------------------------------------------ sweeps
class SweepStopped(Exception):
    """The sweep's StopSignal fired (the user cancelled, or the time budget ran out)."""


@dataclass(frozen=True)
class SweepForecast:
    """What a sweep expects before it starts: how many compiles, how long, how many at a time."""

    kind: str
    simulations: int
    upper: bool                     # True: at most `simulations` (a guided search may stop sooner)
    seconds: float
    jobs: int
    basis: str
    jobs_note: str = ""

    def text(self) -> str:
        from pypto_tui.sim.stages import duration

        count = f"up to {self.simulations}" if self.upper else str(self.simulations)
        line = (f"{self.kind} sweep: {count} simulation(s), about {duration(self.seconds)} "
                f"({self.jobs} at a time; from {self.basis})")
        return line + (f"; {self.jobs_note}" if self.jobs_note else "")


def sweep_size(pipeline: Pipeline, tile: Sequence[int]) -> timings.Size:
    """What one candidate's compile grows with: the tiles of the main tensor and its tensors' bytes
    (the inputs, and an output as large as the largest of them)."""
    from pypto_tui.shapes import auto_tiles

    role = pipeline.needs().tiles[0]
    sizes = [math.prod(i.shape) * J.ITEMSIZE.get(i.dtype, 4) for i in input_specs(pipeline, "zeros") if not i.is_scalar]
    return timings.Size(pipeline.contract().family, auto_tiles(role.shape, tuple(tile)),
                        sum(sizes) + max(sizes, default=0))


def _forecast(kind: str, sizes: Sequence[timings.Size], planned: int, upper: bool, jobs: int) -> SweepForecast:
    history = timings.load_history()
    casts = [timings.forecast(s, history) for s in sizes] or [timings.forecast(timings.Size("", 1, 0), history)]
    ordered = sorted(casts, key=lambda f: f.wall_s)
    # A guided search measures the cheapest-looking candidates first: price the planned count by
    # the median candidate rather than by all of them.
    chosen = casts if not upper else [ordered[len(ordered) // 2]] * planned
    width, note = timings.jobs_for(jobs, max(f.rss_mb for f in casts))
    busy, busy_note = timings.load_factor(width)
    seconds = sum(f.wall_s for f in chosen) / width * busy
    note = "; ".join(n for n in (note, busy_note) if n)
    return SweepForecast(kind, planned, upper, seconds, width, casts[0].basis, note)


class _Measurer:
    """Compiles a batch of candidates in parallel, fills their rows, counts the simulations,
    records their time and memory for later forecasts and reports progress: the one measure
    function every search hands its candidates to."""

    def __init__(self, make_job: Callable[[Any], J.SimJob], row_of: Callable[[Any], SweepRow], *,
                 total_hint: int, jobs: int, timeout_s: float, cache: bool, progress: Progress | None,
                 status: Status | None = None, size_of: Callable[[Any], timings.Size] | None = None,
                 stop: Any = None) -> None:
        self.make_job, self.row_of, self.total_hint = make_job, row_of, total_hint
        self.jobs, self.timeout_s, self.cache, self.progress = jobs, timeout_s, cache, progress
        self.status, self.size_of, self.stop = status, size_of, stop
        self.done = 0
        self.jobs_note = ""

    def _tick(self, _done: int, _total: int, result: J.SimResult) -> None:
        self.done += 1
        if self.progress:
            self.progress(self.done, max(self.total_hint, self.done), result)

    def __call__(self, batch: Sequence[Any]) -> list[float | None]:
        from pypto_tui.sim.runner import run_many

        if self.stop is not None and (why := self.stop.reason()):
            raise SweepStopped(why)
        sizes = [self.size_of(c) for c in batch] if self.size_of else []
        jobs = self.jobs
        if sizes:
            rss = max(timings.forecast(s).rss_mb for s in sizes)
            jobs, note = timings.jobs_for(self.jobs, rss)
            self.jobs_note = note or self.jobs_note
        results = run_many([self.make_job(c) for c in batch], jobs=jobs, timeout_s=self.timeout_s,
                           progress=self._tick, cache=self.cache, status=self.status, stop=self.stop)
        why = ""
        for i, (c, r) in enumerate(zip(batch, results, strict=True)):
            if r.status == J.CANCELLED:
                self.done -= 1
                why = r.error or "cancelled"
                continue
            _fill(self.row_of(c), r)
            if sizes and not r.cached and r.status in (J.OK, J.COMPILE_ERROR):
                timings.record(sizes[i], r.wall_s, r.peak_rss_mb)
        if why:
            raise SweepStopped(why)
        return [r.e2e_us if r.ok else None for r in results]


def _rule_verdict(c: Any) -> str:
    if c.qualified:
        rank = c.rules_rank if getattr(c, "rules_rank", None) is not None else c.rank
        return f"qualified (#{rank + 1} by the rules)"
    bad = [f.rule for f in c.evaluation.findings if f.level in ("warn", "error")]
    return "rejected: " + (", ".join(dict.fromkeys(bad)) or "ranked low")


def _tile_row(c: Any) -> SweepRow:
    rank = c.rules_rank if getattr(c, "rules_rank", None) is not None else c.rank
    return SweepRow(str(tuple(c.tile)), list(c.tile), rank, c.qualified, _rule_verdict(c),
                    estimate_us=c.estimate_us)


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


def _rules_tile(pipeline: Pipeline, plan: Any) -> tuple[int, ...] | None:
    """The tile the documents' order gives the kernel (after any unified-buffer step-down), also
    when the pack lets the estimate decide."""
    if plan.ranking == "rules" or plan.best_by_rules is None:
        return pipeline.chosen_tile()
    from pypto_tui.tiles import choose_tile

    choice = choose_tile(pipeline.kb, pipeline.needs().tiles[0], None, replace(plan, recommended=plan.best_by_rules))
    return choice.tile if choice is not None else None


def _mode(exhaustive: bool, priced: bool) -> str:
    return "exhaustive" if exhaustive else ("estimate" if priced else "guided")


def _tile_error(fit: CostFit) -> float:
    """The spread the guided tile sweep trusts: the fit's near the best (`pick_error`) when the pack
    has it, else its spread over all runs."""
    return fit.pick_error or fit.error


def _search(mode: str, candidates: Sequence[Any], estimates: Sequence[float | None], measure: _Measurer,
            error: float, jobs: int, budget: int, walk: Sequence[Any] | None = None) -> SweepResult[Any] | None:
    """Measure `candidates` as the mode says; `walk` is the documents' guided order."""
    if mode == "exhaustive":
        measure(candidates)
        return None
    if mode == "estimate":
        return estimate_guided_sweep(candidates, estimates, measure, error=error, parallel=jobs,
                                     max_measurements=budget)
    walk = candidates if walk is None else walk
    return guided_sweep_batched(walk, measure, max_measurements=budget) if walk else None


def sweep_tiles(pipeline: Pipeline, *, budget: int = 8, challengers: int = 2, jobs: int = 2,
                timeout_s: float = 300.0, progress: Progress | None = None, cache: bool = True,
                status: Status | None = None, exhaustive: bool = False, stop: Any = None,
                forecast: Callable[[SweepForecast], None] | None = None) -> SweepReport:
    """Measure the qualified tiles (guided by the estimate, by the documents' line walk, or all
    of them), then a few tiles the rules reject, so both verdicts stand side by side."""
    plan = pipeline.tile_plan(top=None)
    pick = pipeline.chosen_tile()
    rules_key = _rules_tile(pipeline, plan)
    # O1.ub-step-down: a tile the op chain cannot hold is never the kernel's (the tile step steps it
    # down; 0.2.0 may compile it but leaves a pass unverifiable), so it is no candidate here either.
    role, kb = pipeline.needs().tiles[0], pipeline.kb
    held = [c for c in plan.candidates if c.qualified
            and role_held_bytes(kb, c.tile, role) > kb.chip.ub_bytes]
    qualified = [c for c in plan.candidates if c.qualified and c not in held]
    rejected = sorted((c for c in plan.candidates if not c.qualified and not c.evaluation.waste_axes),
                      key=lambda c: (c.evaluation.reduce_segments or 1, -c.evaluation.prod, c.rank))[:challengers]
    by_tile = {c.tile: c for c in plan.candidates}
    rows: dict[tuple[int, ...], SweepRow] = {c.tile: _tile_row(c) for c in [*qualified, *rejected]}
    costs = pipeline.costs()
    mode = _mode(exhaustive, any(c.estimate_us is not None for c in qualified))
    axis, line = sweep_line(plan, pick)
    search = qualified if mode != "guided" else line
    planned = len(search) if mode == "exhaustive" else min(budget, len(search))
    extra_planned = len(rejected) + (1 if mode != "estimate" else 0)
    fc = _forecast("tiles", [sweep_size(pipeline, c.tile) for c in search[:64]], planned + extra_planned,
                   mode != "exhaustive", jobs)
    if forecast:
        forecast(fc)
    measure = _Measurer(
        lambda c: cost_job(variant(pipeline, tile=list(c.tile)), str(tuple(c.tile))),
        lambda c: rows.setdefault(c.tile, _tile_row(c)),
        total_hint=planned + extra_planned, jobs=jobs, timeout_s=timeout_s, cache=cache, progress=progress,
        status=status, size_of=lambda c: sweep_size(pipeline, c.tile), stop=stop)
    result: SweepResult[Any] | None = None
    stopped, stepped = "", ""
    try:
        result = _search(mode, qualified, [c.estimate_us for c in qualified], measure,
                         _tile_error(costs.estimator.fit) if costs.estimator else 0.0, jobs, budget, line)
        extra = [c for c in rejected if not rows[c.tile].measured]
        # the rules' pick is measured beside the others, unless the estimate has ruled it out
        if mode != "estimate" and rules_key in by_tile and not (rules_key in rows and rows[rules_key].measured):
            extra.insert(0, by_tile[rules_key])
        if extra:
            measure(extra)
        stepped = _ub_step_down(pipeline, plan, rows, pick, measure)
    except SweepStopped as exc:
        stopped = f"stopped: {exc}"
    report = _report("tiles", rows, len(qualified), measure.done, rules_key, result,
                     plan.best_by_estimate.tile if plan.best_by_estimate else None)
    _finish(report, mode, costs.note, stopped or (result.stopped if result else ""), fc, measure)
    if stepped:
        report.notes.append(stepped)
    if held:
        report.notes.append(f"{len(held)} qualified tile(s) left out: the op chain holds {role.live_buffers} "
                            f"tile-sized buffers, more than the unified buffer takes (O1.ub-step-down)")
    if mode == "guided" and axis >= 0:
        report.notes.insert(0, f"sweep line: axis {axis} varied through the rules' pick {tuple(pick or ())} "
                               f"({len(line)} qualified tiles on it)")
    return report


def _finish(report: SweepReport, mode: str, estimate: str, stopped: str, fc: SweepForecast, measure: _Measurer) -> None:
    """The search's mode, the estimate's provenance, why it stopped and how it was sized."""
    report.mode, report.estimate, report.stopped = mode, estimate, stopped
    report.forecast_s, report.jobs = round(fc.seconds, 1), fc.jobs
    if mode == "exhaustive":
        report.notes.append(f"exhaustive: {report.simulations} simulation(s), every one of the {report.qualified} "
                            "qualified candidate(s)")
    elif mode == "estimate":
        report.notes.append(f"guided by {estimate}")
    elif estimate:
        report.notes.append(estimate)
    if stopped:
        report.notes.append(f"search {stopped}" if not stopped.startswith("stopped") else stopped)
    if measure.jobs_note:
        report.notes.append(measure.jobs_note)


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


@cites("O1.measure-candidates", "O2.sweep-points", "O1.ub-step-down", "CL.two-tiles-measured", "CL.loop-sweep",
       "SIM.cost-estimate")
def sweep(pipeline: Pipeline, kind: str, **options: Any) -> list[SweepReport]:
    """The measured search the documents ask for: tiles (>= 2 measured, the reduce-axis sweet spot),
    loop counts (>= 3 points, both ends examined), or both; guided by the cost estimate when the
    family has one, or exhaustive."""
    if kind not in ("tiles", "loops", "both"):
        raise InputError(f"--sweep {kind!r}: use tiles, loops or both")
    out = []
    if kind in ("tiles", "both"):
        out.append(sweep_tiles(pipeline, **options))
        if out[-1].stopped.startswith("stopped"):
            return out
    if kind in ("loops", "both"):
        options.pop("challengers", None)
        out.append(sweep_loops(pipeline, **options))
    return out


def sweep_loops(pipeline: Pipeline, *, budget: int = 6, jobs: int = 2, timeout_s: float = 300.0,
                progress: Progress | None = None, cache: bool = True, status: Status | None = None,
                exhaustive: bool = False, stop: Any = None,
                forecast: Callable[[SweepForecast], None] | None = None) -> SweepReport:
    """Measure loop counts: in the estimate's order, from the middle of the log scale outwards
    (O2), or every one."""
    plan = pipeline.loop_plan()
    if plan is None:
        raise InputError("no tile chosen: pick a tile before sweeping loop counts")
    counts = sorted({c.loop_count for c in plan.candidates if c.ok and c.loop_count <= plan.total})
    qualified = [c for c in counts if c > 1] or counts
    rows: dict[tuple[int, ...], SweepRow] = {}
    price: dict[int, float | None] = {}
    for position, cand in enumerate(plan.candidates):
        if cand.loop_count not in qualified:
            continue
        ring = pipeline.kb.ladders.loop_ring_of(cand.loop_count)
        where = f"ring {ring + 1} of the log scale" if ring is not None else "off the ladder"
        rows[(cand.loop_count,)] = SweepRow(f"loop_count {cand.loop_count}", cand.loop_count, position, True,
                                            f"{where}, BASIC_BATCH {cand.basic_batch}", estimate_us=cand.estimate_us)
        price[cand.loop_count] = cand.estimate_us
    costs = pipeline.costs()
    mode = _mode(exhaustive, any(v is not None for v in price.values()))
    planned = len(qualified) if mode == "exhaustive" else min(budget, len(qualified))
    tile = pipeline.chosen_tile() or ()
    fc = _forecast("loops", [sweep_size(pipeline, tile)] * len(qualified), planned, mode != "exhaustive", jobs)
    if forecast:
        forecast(fc)
    measure = _Measurer(lambda n: cost_job(variant(pipeline, loop_count=n), f"loop_count {n}"),
                        lambda n: rows[(n,)], total_hint=planned, jobs=jobs, timeout_s=timeout_s, cache=cache,
                        progress=progress, status=status, size_of=lambda n: sweep_size(pipeline, tile), stop=stop)
    result: SweepResult[Any] | None = None
    stopped = ""
    try:
        fit = costs.estimator.fit if costs.estimator else None
        result = _search(mode, qualified, [price.get(n) for n in qualified], measure,
                         (fit.loop_error or fit.error) if fit else 0.0, jobs, budget)
    except SweepStopped as exc:
        stopped = f"stopped: {exc}"
    rec = plan.best_by_rules.loop_count if plan.best_by_rules else None
    est = plan.best_by_estimate.loop_count if plan.best_by_estimate else None
    report = _report("loops", rows, len(qualified), measure.done, (rec,) if rec else None, result,
                     (est,) if est else None)
    _finish(report, mode, costs.note, stopped or (result.stopped if result else ""), fc, measure)
    if not plan.needs_loop:
        report.notes.append(f"no loop is needed ({plan.reason}); the sweep forces one to compare")
    return report


def _fill(row: SweepRow, r: J.SimResult) -> None:
    row.measured = True
    row.status, row.e2e_us, row.tasks = r.status, r.e2e_us, r.tasks
    row.compile_s, row.wall_s, row.peak_rss_mb = r.compile_s, r.wall_s, r.peak_rss_mb
    row.reason = r.reason or r.error


def _report(kind: str, rows: dict[tuple[int, ...], SweepRow], qualified: int, simulations: int,
            rules_key: tuple[int, ...] | None, result: Any, estimate_key: tuple[int, ...] | None = None) -> SweepReport:
    measured = sorted((r for r in rows.values() if r.measured and r.e2e_us is not None), key=lambda r: r.e2e_us or 0.0)
    for i, r in enumerate(measured):
        r.cost_rank = i
    ordered = sorted(rows.values(), key=lambda r: (not r.measured, r.rule_rank if r.rule_rank is not None else 1e9))
    best_rules = rows.get(tuple(rules_key)) if rules_key else None
    best_cost = measured[0] if measured else None
    best_ok = next((r for r in measured if r.qualified), None)
    report = SweepReport(kind, [r for r in ordered if r.measured] + [r for r in ordered if not r.measured],
                         qualified, simulations, best_rules, best_cost, best_ok)
    report.best_by_estimate = rows.get(tuple(estimate_key)) if estimate_key else None
    if best_cost is not None and best_rules is not None and best_cost is not best_rules:
        if best_rules.e2e_us is None:
            why = (f"estimated {best_rules.estimate_us:.2f} us, not measured: the estimate rules it out"
                   if best_rules.estimate_us is not None and not best_rules.measured else "not measured")
            report.disagreements.append(f"the rules pick {best_rules.label} ({why}); the cost model's "
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
