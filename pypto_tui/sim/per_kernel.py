"""Verify a module of several kernels kernel by kernel, then end to end.

Why: the whole module runs at the task's size constants made as small as *every* kernel's design allows
together (sim/module_test.py), so one large kernel (a transposed conv's zero-inserted input, a 3-D pool)
sets the size the others run at, and a model of many kernels holds all of them in one worker. Verified on
its own, each kernel runs at its own test shapes (the level-1 search, sim/verify_shapes.py, over its own
contract from its group of the graph), on its own random inputs, in a worker of its own, a few at a time:
each one's memory and time are its own. Its baseline is its group of the task's graph
(sim/group_reference.py), never the kernel module. The same criterion applies to each: every element
within tolerance and every compiler pass row present and passing.

The module then runs end to end, at the smallest sizes its task builds at, each kernel re-planned there
(module_test.wiring_test): that checks the wiring (the order, the views forward takes between kernels, the
task's parameters and the baseline's own output) without holding every kernel's design at once, which is
what ran level-2 conv chains out of memory or time. It is skipped when a kernel already fails on its own,
whose verdict then names that kernel. `design_kept` is every kernel's own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pypto_tui.design import Pipeline, module_plan_of, module_stages
from pypto_tui.errors import InputError
from pypto_tui.sim import jobs as J
from pypto_tui.sim.design_runs import Progress, Status
from pypto_tui.sim.group_reference import SPEC_VERSION
from pypto_tui.sim.verification import (
    Criterion,
    PreparedVerify,
    VerifyReport,
    finish_verify,
    prepare_verify,
    wants_second_size,
    with_second_size,
)

SHAPED_VIEWS = ("reshape", "expand")
"""View steps that carry the task's sizes: a group holding one has no reference at smaller shapes."""


@dataclass(frozen=True)
class KernelJob:
    """One kernel of the module, ready to verify on its own: its prepared verification (the job is None
    when it cannot be, the report says why) and the reference task file its job compares with."""

    index: int
    ops: str
    prepared: PreparedVerify
    reference: Path | None = None


def group_spec(graph: Any, group: Any, contract: Any) -> dict[str, Any]:
    """What `group_reference.evaluate` needs of a group: its nodes (graph data), forward's tensors in the
    order the kernel takes them, the constants it reads, its output and dtype. Raises InputError for a
    group no reference can be built for at test shapes."""
    from pypto_tui.contract.group import group_facts, module_call
    from pypto_tui.errors import Unsupported
    from pypto_tui.ops.registry import kind

    try:
        facts = group_facts(graph, group.nodes, group.reads, group.writes, "reference")
    except Unsupported as exc:
        raise InputError(str(exc)) from exc
    nodes: list[dict[str, Any]] = []
    for nid in group.nodes:
        n = graph.node(nid)
        data = n.to_data()
        mod = module_call(n)
        if mod is not None:
            data["module"] = mod[1]
        elif n.role == "pool" and n.spelling.startswith("F."):
            data["functional"] = n.spelling[2:]
            data["attrs"] = {k: v for k, v in data["attrs"].items() if k not in ("nd", "return_indices")}
        elif n.op == "view":
            shaped = [s.get("kind") for s in data["attrs"].get("steps", ()) if s.get("kind") in SHAPED_VIEWS]
            if shaped:
                raise InputError(f"{n.spelling} ({shaped[0]}) carries the task's sizes, which its test shapes change")
        else:
            k = kind(n.op)
            if k is None or k.reference is None:
                raise InputError(f"{n.spelling} ({n.op}) has no reference to verify it against on its own")
        nodes.append(data)
    consts = {}
    for vid in group.reads:
        v = graph.value(vid)
        if v is not None and v.kind in ("const", "scalar"):
            consts[vid] = v.value
    writes = graph.node(group.writes)
    modules = {row[0]: row for row in (contract.signature.modules if contract.signature else ())}
    missing = [m for m in facts.modules if m not in modules]
    if missing:
        raise InputError(f"the kernel's contract does not build self.{missing[0]}")
    return {"version": SPEC_VERSION, "nodes": nodes, "args": list(facts.reads), "consts": consts,
            "writes": group.writes, "dtype": (writes.dtype if writes is not None else None) or "fp32",
            "modules": [[modules[m][0], modules[m][1], modules[m][2]] for m in facts.modules]}


def reference_source(spec: dict[str, Any], shapes: list[list[int]], title: str) -> str:
    """A task file whose Model is the group's computation: the group's modules built as the task's
    __init__ builds them (the same seed draws the same weights as the kernel's ModelNew), forward
    evaluated node by node (group_reference.evaluate)."""
    init = "".join(f"        self.{attr} = nn.{kind}({args})\n" for attr, kind, args in spec["modules"])
    inputs = ", ".join(f"torch.randn({tuple(s)!r})" for s in shapes)
    return (f'"""{title}: the reference its kernel is verified against on its own (written by pypto-tui)."""\n\n'
            "import json\n\nimport torch\nimport torch.nn as nn\n\n"
            "from pypto_tui.sim.group_reference import evaluate\n\n"
            f"SPEC = json.loads({json.dumps(spec, sort_keys=True)!r})\n\n\n"
            "class Model(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n" + init + "\n"
            "    def forward(self, *args):\n        return evaluate(self, SPEC, args)\n\n\n"
            f"def get_inputs():\n    return [{inputs}]\n\n\n"
            "def get_init_inputs():\n    return []\n")


def _store(source: str, name: str) -> Path:
    """The reference file, stored by its content under the result cache (the worker runs it as the
    baseline; a verify job's cache key hashes its text)."""
    from pypto_tui.fileio import write_atomic
    from pypto_tui.sim.cache import cache_root

    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_root() / "kernel_references" / digest / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, source, force=True)
    return path


def plan_kernel_jobs(pipeline: Pipeline, *, scale: str = "small", memory_limit_mb: int | None = None,
                     criterion: Criterion = Criterion()) -> list[KernelJob]:
    """One verify job per kernel of the task's module, each at its own test shapes with its own inputs
    and its group's reference. InputError when the task is not a module of several kernels."""
    designed = module_stages(pipeline)
    planned = module_plan_of(pipeline)
    if designed is None or planned is None:
        raise InputError("--per-kernel verifies a module of several kernels; this task is one kernel")
    if designed.refused:
        raise InputError(designed.refused)
    graph, mp = planned
    groups = {g.index: g for g in mp.groups}
    task = Path(str(pipeline.contract().task_path or pipeline.design.task))
    out: list[KernelJob] = []
    for s in designed.stages:
        prepared = prepare_verify(s.pipeline, scale=scale, memory_limit_mb=memory_limit_mb, criterion=criterion)
        label = f"{task.name} kernel {s.index}"
        if prepared.job is None or prepared.test is None:
            out.append(KernelJob(s.index, s.ops, prepared))
            continue
        try:
            spec = group_spec(graph, groups[s.index], prepared.test.contract())
        except InputError as exc:
            report = replace(prepared.report, supported=False, reason=str(exc))
            out.append(KernelJob(s.index, s.ops, PreparedVerify(None, report, prepared.test)))
            continue
        shapes = [list(i.shape) for i in prepared.job.inputs if not i.is_scalar]
        title = f"Kernel {s.index} of {task.name} ({s.ops})"
        ref = _store(reference_source(spec, shapes, title), f"{task.stem}_k{s.index}.py")
        job = replace(prepared.job, task_file=str(ref), label=label, stages=None)
        second = _second_against_group(prepared.second, graph, groups[s.index], title, task, s.index, label)
        out.append(KernelJob(s.index, s.ops, replace(prepared, job=job, second=second), ref))
    return out


def _second_against_group(second: PreparedVerify | None, graph: Any, group: Any, title: str, task: Path,
                          index: int, label: str) -> PreparedVerify | None:
    """A kernel's second test size (another tile count on its counted axes) against its group's
    reference at those shapes; None when it has none or its group cannot be referenced there."""
    if second is None or second.job is None or second.test is None:
        return None
    try:
        spec = group_spec(graph, group, second.test.contract())
    except InputError:
        return None
    shapes = [list(i.shape) for i in second.job.inputs if not i.is_scalar]
    ref = _store(reference_source(spec, shapes, title), f"{task.stem}_k{index}.py")
    return replace(second, job=replace(second.job, task_file=str(ref), label=label, stages=None))


def kernel_verdict(kj: KernelJob, report: VerifyReport) -> dict[str, Any]:
    """One kernel's row of the JSON (`kernel_verdicts`) and the table."""
    verdict = "pass" if report.passed else ("fail" if report.supported else "unsupported")
    return {"index": kj.index, "ops": kj.ops, "verdict": verdict, "status": report.status, "reason": report.reason,
            "shapes": report.shapes, "max_abs_err": report.max_abs_err, "max_rel_err": report.max_rel_err,
            "pass_rows": report.pass_rows, "passes_checked": len(report.passes_checked),
            "passes_expected": len(report.passes_expected), "missing_passes": list(report.missing_passes),
            "first_failing_pass": report.first_failing_pass, "design_kept": report.design_kept,
            "seconds": report.wall_s, "peak_rss_mb": report.peak_rss_mb, "tile_counts": report.tile_counts,
            "size_trials": report.size_trials}


JobRunner = Callable[[Sequence[J.SimJob]], list[J.SimResult]]
"""Runs verify jobs and returns their results in job order: the local pool by default, a cluster's
workers when the caller hands one in (the CLI's --scheduler); the planning stays here either way."""


def verify_per_kernel(pipeline: Pipeline, *, scale: str = "small", jobs: int = 2, timeout_s: float = 600.0,
                      cache: bool = True, memory_limit_mb: int | None = None, progress: Progress | None = None,
                      status: Status | None = None, criterion: Criterion = Criterion(),
                      run: JobRunner | None = None) -> VerifyReport:
    """Each kernel on its own (up to `jobs` workers at once, or on `run`'s), then, when every one
    passes, the module end to end. Passes only when every kernel and the module pass; a kernel that
    fails on its own is named (`first_diverging_kernel`, the reason)."""
    kernels = plan_kernel_jobs(pipeline, scale=scale, memory_limit_mb=memory_limit_mb, criterion=criterion)
    whole = prepare_verify(pipeline, scale=scale, memory_limit_mb=memory_limit_mb, criterion=criterion,
                           wiring=True)
    return run_kernel_jobs(kernels, whole, jobs=jobs, timeout_s=timeout_s, cache=cache, progress=progress,
                           status=status, run=run)


def run_kernel_jobs(kernels: list[KernelJob], whole: PreparedVerify, *, jobs: int = 2, timeout_s: float = 600.0,
                    cache: bool = True, progress: Progress | None = None, status: Status | None = None,
                    run: JobRunner | None = None) -> VerifyReport:
    """Run planned kernel jobs (`plan_kernel_jobs`), then `whole` (the module's own verification) when
    every kernel passed, and fold both into one report. `run` runs a batch of jobs (default: the
    local pool, `jobs` at once)."""
    from pypto_tui.sim.runner import run_many

    def local(batch: Sequence[J.SimJob], width: int = jobs) -> list[J.SimResult]:
        return run_many(batch, jobs=width, timeout_s=timeout_s, cache=cache, progress=progress, status=status)

    batch_run: JobRunner = run or local
    runnable = [k for k in kernels if k.prepared.job is not None]
    results = iter(batch_run([k.prepared.job for k in runnable if k.prepared.job is not None]))
    reports = [finish_verify(k.prepared, next(results)) if k.prepared.job is not None else k.prepared.report
               for k in kernels]
    # Each kernel that passed runs again at its second size (another tile count): both must pass.
    again = [(i, k.prepared.second) for i, (k, rep) in enumerate(zip(kernels, reports, strict=True))
             if k.prepared.second is not None and wants_second_size(k.prepared, rep)]
    seconds = batch_run([s.job for _, s in again if s.job is not None]) if again else []
    done = {i: finish_verify(s, r) for (i, s), r in zip(again, seconds, strict=True)}
    for i, k in enumerate(kernels):
        if k.prepared.job is not None:
            with_second_size(reports[i], done.get(i))
    verdicts = [kernel_verdict(k, rep) for k, rep in zip(kernels, reports, strict=True)]
    failing = next((v for v in verdicts if v["verdict"] != "pass"), None)
    if failing is None and whole.job is not None:
        report = finish_verify(whole, (run or (lambda b: local(b, 1)))([whole.job])[0])
        if not report.passed:
            report.reason = f"every kernel verifies on its own; the module end to end: {report.reason}"
    else:
        report = replace(whole.report, passed=False)
        if failing is not None:
            report.first_diverging_kernel = int(failing["index"])
            report.status = failing["status"] or J.ERROR
            report.reason = (f"kernel {failing['index']} ({failing['ops']}) fails on its own at its test shapes: "
                             f"{failing['reason']}; the module end to end was not run")
    report.kernel_verdicts = verdicts
    report.per_kernel = True
    report.design_kept = all(v["design_kept"] for v in verdicts)
    return report


__all__ = ["JobRunner", "KernelJob", "group_spec", "kernel_verdict", "plan_kernel_jobs", "reference_source",
           "run_kernel_jobs", "verify_per_kernel"]
