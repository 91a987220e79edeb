"""`pypto-tui kb calibrate`: measure tasks exhaustively, fit the cost estimate, write a pack.

For each task: the exhaustive tile sweep (every qualified tile, each with the loop the pipeline
plans for it) and the exhaustive loop sweep (every qualified loop count for the chosen tile; not
for a task that needs no loop, whose sweep would force one the planner never gives it).
Every run that compiled becomes a sample (estimate_fit.Sample); the samples of each operator
family are fitted (estimate_fit.fit) and written to PACKDIR as a pack that extends the bundled
default: pack.toml (the pypto version measured on, the tasks) and estimate.toml (the fitted
families; the families this run did not measure keep the base pack's fits, each still saying
which pypto version it came from). The runs go through the result cache, so calibrating again,
or calibrating a second pack over the same tasks, costs only the runs not made before.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto_tui.design import Design, Pipeline
from pypto_tui.design_estimate import reduce_axes
from pypto_tui.errors import InputError
from pypto_tui.estimate import Point
from pypto_tui.estimate_fit import Sample, estimate_toml, fit_all
from pypto_tui.fileio import write_atomic
from pypto_tui.kb import CostFit, KnowledgeBase
from pypto_tui.sim.design_runs import SweepReport, sweep_loops, sweep_tiles, variant


@dataclass
class TaskRuns:
    """What one task contributed: its family, the sweeps, the samples, or why it was skipped."""

    task: str
    family: str = ""
    op: str = ""
    reports: list[SweepReport] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    skipped: str = ""
    notes: list[str] = field(default_factory=list)


@dataclass
class Calibration:
    pypto: str
    out: Path
    tasks: list[TaskRuns]
    fits: dict[str, CostFit]
    kept: dict[str, CostFit]
    ranking: str

    def to_dict(self) -> dict[str, Any]:
        def fit_dict(f: CostFit) -> dict[str, Any]:
            return {"pypto": f.pypto, "coefficients": dict(f.coefficients), "intercept": f.intercept, "size": f.size,
                    "error": f.error, "worst": f.worst, "samples": f.samples, "tasks": list(f.tasks)}

        return {
            "pack": str(self.out), "pypto": self.pypto, "ranking": self.ranking,
            "fitted": {k: fit_dict(v) for k, v in self.fits.items()},
            "kept_from_base": {k: fit_dict(v) for k, v in self.kept.items()},
            "tasks": [{"task": t.task, "family": t.family, "op": t.op, "samples": len(t.samples),
                       "skipped": t.skipped or None, "notes": t.notes,
                       "sweeps": [{"sweep": r.sweep, "simulations": r.simulations, "qualified": r.qualified,
                                   "best": r.best_qualified.label if r.best_qualified else None,
                                   "best_us": r.best_qualified.e2e_us if r.best_qualified else None,
                                   "stopped": r.stopped or None} for r in t.reports]}
                      for t in self.tasks],
        }


def check_out_dir(out: Path, force: bool) -> None:
    """The pack folder must be new or empty, or --force given (never overwrite silently)."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out} is a file: --out takes a folder for the calibrated pack")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise InputError(f"{out} is not empty: pass --force to replace its pack.toml and estimate.toml")


def _samples(pipeline: Pipeline, task: str, family: str, op: str, report: SweepReport) -> list[Sample]:
    role = pipeline.needs().tiles[0]
    needs = pipeline.needs()
    itemsize = pipeline.kb.dtype_bytes(role.dtype)
    out = []
    for row in report.rows:
        if not row.measured or row.e2e_us is None or row.e2e_us <= 0:
            continue
        if report.sweep == "tiles":
            tile = tuple(row.value)
            count = variant(pipeline, tile=list(tile)).chosen_loop_count()
        else:
            tile, count = tuple(pipeline.chosen_tile() or ()), int(row.value)
        loop = count if count and count > 1 else None
        point = Point(role.shape, itemsize, reduce_axes(pipeline.kb, role, op), tile, needs.loop_axis, loop)
        out.append(Sample(task, family, op, point, float(row.e2e_us), qualified=row.qualified))
    return out


def measure_task(kb: KnowledgeBase, task: Path, kinds: Sequence[str], **options: Any) -> TaskRuns:
    """Both exhaustive sweeps of one task, and its samples."""
    runs = TaskRuns(task.stem)
    p = Pipeline(kb, Design(task=str(task)))
    try:
        c = p.contract()
        runs.family, runs.op = c.family, c.op or ""
        if p.kernel_plan().blocked:
            runs.skipped = p.kernel_plan().blocked
            return runs
    except InputError as exc:
        runs.skipped = str(exc)
        return runs
    for kind in kinds:
        if kind == "loops" and not (p.loop_plan() and p.loop_plan().needs_loop):  # type: ignore[union-attr]
            # the sweep would force a loop the planner never gives this task: not a regime to learn
            runs.notes.append("no loop sweep: the task needs no loop (its sweep would force one)")
            continue
        sweep = sweep_tiles if kind == "tiles" else sweep_loops
        opts = dict(options)
        if kind == "loops":
            opts.pop("challengers", None)
        try:
            report = sweep(p, exhaustive=True, **opts)
        except InputError as exc:
            runs.notes.append(f"no {kind} sweep: {exc}")
            continue
        runs.reports.append(report)
        runs.samples += _samples(p, task.stem, runs.family, runs.op, report)
        if report.stopped.startswith("stopped"):
            break
    return runs


def calibrate(kb: KnowledgeBase, tasks: Sequence[tuple[Path, Sequence[str]]], out: Path, *,
              ranking: str = "estimate", force: bool = False, on_task: Callable[[str], None] | None = None,
              **options: Any) -> Calibration:
    """Measure each (task, sweeps to run), fit, write. `options` go to the sweeps (jobs,
    timeout_s, cache, progress, status, stop, forecast)."""
    from pypto_tui.sim.shim import pypto_version

    check_out_dir(out, force)
    version = pypto_version() or "unknown"
    measured: list[TaskRuns] = []
    stop = options.get("stop")
    for task, kinds in tasks:
        if on_task:
            on_task(f"{task.name} ({' and '.join(kinds)})")
        measured.append(measure_task(kb, task, kinds, **options))
        if stop is not None and stop.reason():
            break
    samples = [s for t in measured for s in t.samples]
    fits = fit_all(samples, version, kb.chip.aiv_cores)
    if not fits:
        raise InputError("no family got two measured runs of one task: nothing to fit (see the sweeps' notes)")
    base = dict(kb.estimate.fits) if kb.estimate else {}
    kept = {k: v for k, v in base.items() if k not in fits}
    write_pack(out, {**kept, **fits}, version, [t.task for t in measured if t.samples], ranking)
    return Calibration(version, out, measured, fits, kept, ranking)


def write_pack(out: Path, fits: dict[str, CostFit], version: str, tasks: Sequence[str], ranking: str) -> None:
    """pack.toml (extends the bundled default) and estimate.toml in `out`."""
    when = _dt.date.today().isoformat()
    note = (f"fitted by `pypto-tui kb calibrate` on pypto {version}, {when}, over {len(tasks)} task(s): "
            + ", ".join(tasks))
    out.mkdir(parents=True, exist_ok=True)
    pack = "\n".join([
        "# A pack written by `pypto-tui kb calibrate`: the bundled default with cost-estimate",
        "# coefficients fitted to this machine's pypto (estimate.toml). Everything else comes from default.",
        "[pack]",
        'name = "calibrated"',
        f'version = "{when}"',
        "schema = 1",
        'extends = "default"',
        f'description = "The default pack with the cost estimate fitted on pypto {version} ({len(tasks)} task(s))."',
        f'pypto = "{version}"',
    ]) + "\n"
    write_atomic(out / "pack.toml", pack, force=True)
    write_atomic(out / "estimate.toml", estimate_toml(fits, ranking, note), force=True)
