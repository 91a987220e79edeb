"""`sim` and `verify`: the real pypto 0.2.0 compiler on the CPU, one subprocess per candidate.

Both say exactly what to install when pypto or torch is missing (exit 2), never leave the
compiler's output folders behind, show on stderr what the workers are doing (progress.py), and
end their workers when they are stopped (Ctrl+C, SIGTERM). `verify` checks the generated kernel
or, with --kernel, any kernel module; it passes only when every compiler pass agrees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from pypto_tui.cli.common import (
    Exit,
    FrontEndOption,
    JsonOption,
    KbOption,
    KernelIndexOption,
    SubmoduleOption,
    TraceTimeoutOption,
    emit_json,
    handles_input_errors,
    load_kb,
    note,
    use_front_end,
)
from pypto_tui.cli.suite_cmd import suite_dispatch
from pypto_tui.errors import InputError
from pypto_tui.kb import MAX_SIZES, MAX_TRIALS
from pypto_tui.shapes import MAX_DIM

TaskArg = Annotated[Path, typer.Argument(help="A KernelBench task file.")]


def _pipeline(task: Path, kb: Path | None, tile: str | None, loop_count: int | None, flavour: str | None = None,  # type: ignore[no-untyped-def]
              front_end: str = "static", trace_timeout: float = 300.0):
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.fileio import require_file
    from pypto_tui.shapes import parse_dims

    require_file(task, "task file")
    pack = load_kb(kb)
    front_end = use_front_end(task, pack, front_end, trace_timeout)
    design = Design(task=str(task), kb=str(kb) if kb else None, flavour=flavour,
                    tile=list(parse_dims(tile, "tile")) if tile else None, loop_count=loop_count, front_end=front_end)
    p = Pipeline(pack, design)
    if tile:
        from pypto_tui.shapes import parse_tile_for

        parse_tile_for(p.geometry().shape, tile)
    return p


def _picked_pipeline(task: Path, kb: Path | None, tile: str | None, loop_count: int | None,
                     kernel_index: int | None, submodule: str | None, front_end: str = "static",
                     trace_timeout: float = 300.0) -> tuple[Any, dict[str, Any]]:
    """One kernel of the task's module (--kernel-index or --submodule), designed as a task of its own
    with --tile and --loop-count applied to it, and what the document says about it."""
    from pypto_tui.cli.kernel_pick import task_pipelines
    from pypto_tui.fileio import require_file
    from pypto_tui.shapes import parse_dims, parse_tile_for

    require_file(task, "task file")
    pack = load_kb(kb)
    front_end = use_front_end(task, pack, front_end, trace_timeout)
    [(shown, p)] = task_pipelines(task, pack, kernel_index, submodule, front_end)
    changes: dict[str, Any] = {}
    if tile:
        changes["tile"] = list(parse_dims(tile, "tile"))
    if loop_count is not None:
        changes["loop_count"] = loop_count
    if changes:
        p = p.with_design(**changes)
    if tile:
        parse_tile_for(p.geometry().shape, tile)
    if shown is None:  # a task of one kernel: kernel 0 is the task
        from pypto_tui.design import task_submodule

        c = p.contract()
        return p, {"index": 0, "ops": c.op or c.family, "submodule": task_submodule(c)}
    return p, shown.where()


def _require_sim() -> None:
    from pypto_tui.sim.availability import require_sim

    require_sim()


@handles_input_errors
@suite_dispatch("sim")  # a folder of tasks runs as a suite (suite_cmd.py)
def sim(
    task: TaskArg,
    tile: Annotated[str | None, typer.Option("--tile", help="Simulate this tile (default: the recommended one).",
                                             show_default=False)] = None,
    loop_count: Annotated[int | None, typer.Option("--loop-count", help="Use this loop count.", min=1,
                                                   max=MAX_DIM, show_default=False)] = None,
    sweep: Annotated[str | None, typer.Option("--sweep", help="tiles, loops or both: measure candidates, guided "
                                              "by the pack's cost estimate (else the documents' sweep).",
                                              show_default=False)] = None,
    exhaustive: Annotated[bool, typer.Option("--exhaustive", help="With --sweep: measure every qualified "
                                             "candidate (the reference the guided sweep is judged by).")] = False,
    budget: Annotated[int, typer.Option("--budget", help="Most simulations per guided sweep.", min=1)] = 8,
    time_budget: Annotated[float | None, typer.Option("--time-budget", help="Stop the sweep after this many "
                                                      "seconds (what finished is reported).", min=1,
                                                      show_default=False)] = None,
    jobs: Annotated[int, typer.Option("--jobs", help="Compiles in parallel.", min=1)] = 2,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per compile.", min=1)] = 300.0,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached results.")] = False,
    kernel: Annotated[Path | None, typer.Option("--kernel", help="Price this kernel module (any file that defines "
                                                "ModelNew with Model's __init__ signature) instead of the generated "
                                                "one: every kernel it launches is timed.", show_default=False)] = None,
    kernel_index: KernelIndexOption = None,
    submodule: SubmoduleOption = None,
    fusion: Annotated[str, typer.Option("--fusion", help="A chain's plan: chosen (the pack's fusion rules), "
                                        "unfused (every operator a kernel of its own), or compare (both, with "
                                        "chosen / unfused).")] = "chosen",
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Compile the design's kernel in SIM mode and report the cost-model time (µs) per candidate,
    against the task's roofline (the least time the pack's chip profile allows).

    Runs pypto's compiler on the generated kernel in worker subprocesses (each in its own process
    group, killed at --timeout); the task file itself is not executed (verify does that)."""
    from pypto_tui.sim import design_runs as R
    from pypto_tui.sim.runner import run_one

    if sweep not in (None, "tiles", "loops", "both"):
        raise InputError(f"--sweep {sweep!r}: use tiles, loops or both")
    if (exhaustive or time_budget) and sweep is None:
        raise InputError("--exhaustive and --time-budget apply to a sweep: add --sweep tiles, loops or both")
    if kernel is not None and (tile or loop_count or sweep):
        raise InputError("--tile, --loop-count and --sweep choose the generated kernel's design; with --kernel the "
                         "kernel file decides: drop them")
    if fusion not in ("chosen", "unfused", "compare"):
        raise InputError(f"--fusion {fusion!r}: use chosen, unfused or compare")
    if fusion != "chosen" and (kernel is not None or sweep):
        raise InputError("--fusion prices the generated module's plans: drop --kernel and --sweep")
    picking = kernel_index is not None or submodule is not None
    if picking and kernel is not None:
        raise InputError("--kernel-index and --submodule pick a kernel of the generated module; with --kernel the "
                         "kernel file decides: drop them")
    if picking and fusion != "chosen":
        raise InputError("--fusion prices the whole module's plans: drop --kernel-index and --submodule")
    picked: dict[str, Any] | None = None
    if picking:
        p, picked = _picked_pipeline(task, kb, tile, loop_count, kernel_index, submodule, front_end, trace_timeout)
    else:
        p = _pipeline(task, kb, tile, loop_count, front_end=front_end, trace_timeout=trace_timeout)
    if fusion != "chosen":
        _require_chain(p)
    if fusion == "unfused":
        p = p.unfused()
    job = R.kernel_file_job(p, kernel) if kernel is not None else None
    _require_sim()
    from pypto_tui.cli.progress import SweepBar, workers_end_with_us
    from pypto_tui.roofline import try_roofline
    from pypto_tui.sim.runner import StopSignal

    doc: dict[str, Any] = {"task": str(task), "tile": list(p.chosen_tile() or []) if job is None else [],
                           "loop_count": p.chosen_loop_count() if job is None else None,
                           "front_end": p.design.front_end}
    if kernel is not None:
        doc["kernel"] = str(kernel)
    if picked is not None:  # one kernel of the module, priced alone (its own inputs and roofline)
        doc["picked"] = picked
    bound, why_not = try_roofline(p.contract(), p.kb)
    if bound is None and job is None and picked is None:
        bound, per_kernel = _module_roofline(p)
        if per_kernel:
            doc["roofline_kernels"] = per_kernel
    reports = []
    with workers_end_with_us(), SweepBar("simulating", enabled=not json_out) as bar:
        if fusion == "compare":
            chosen, doc["fusion"] = R.price_fusion(p, jobs=jobs, timeout_s=timeout, cache=not no_cache,
                                                   progress=bar.tick, status=bar.stage)
            doc["result"] = chosen.to_json()
        elif sweep is None:
            r = run_one(job or R.cost_job(p, f"tile {p.chosen_tile()}"), jobs=jobs, timeout_s=timeout,
                        progress=bar.tick, status=bar.stage, cache=not no_cache)
            doc["result"] = r.to_json() if hasattr(r, "to_json") else r.__dict__
        else:
            reports = R.sweep(p, sweep, budget=budget, jobs=jobs, timeout_s=timeout, progress=bar.tick,
                              status=bar.stage, cache=not no_cache, exhaustive=exhaustive,
                              stop=StopSignal(time_budget), forecast=lambda f: bar.announce(f.text()))
            doc["sweeps"] = [x.to_dict() for x in reports]
            doc["best_by_rules"] = {x.sweep: x.best_by_rules.to_dict() if x.best_by_rules else None for x in reports}
            doc["best_by_estimate"] = {x.sweep: x.best_by_estimate.to_dict() if x.best_by_estimate else None
                                       for x in reports}
    _add_roofline(doc, bound, why_not)
    failed = False
    if sweep is None:
        failed = doc["result"].get("status") != "ok" or doc.get("fusion", {}).get("unfused", {}).get("status",
                                                                                                  "ok") != "ok"
    else:
        failed = not any(x.best_by_cost for x in reports)
    if json_out:
        emit_json(doc)
    else:
        _show_sim(doc, reports)
    raise typer.Exit(Exit.FINDINGS if failed else Exit.OK)


def _require_chain(p: Any) -> None:
    """--fusion compares plans of a chain: a task of one kernel has only one plan."""
    from pypto_tui.design import module_plan_of

    if module_plan_of(p) is None and module_plan_of(p.unfused()) is None:
        raise InputError("--fusion: this task is one kernel (no chain of operators to fuse or split); drop --fusion")


def _module_roofline(p: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A chain's roofline: each kernel's own (its contract), and their sum (the plan's, intermediates
    included: roofline.module_roofline); (None, []) when the task is no chain or a kernel has none."""
    from pypto_tui.design import module_stages
    from pypto_tui.roofline import module_roofline

    try:
        designed = module_stages(p)
    except InputError:
        return None, []
    if designed is None or designed.refused:
        return None, []
    try:
        m = module_roofline(designed.stages, p.kb)
    except (InputError, ValueError, TypeError, KeyError):
        return None, []
    per = [{"index": s.index, "ops": s.ops, "roofline_us": r.roofline_us, "bound": r.bound, "bytes": r.work.bytes}
           for s, r in zip(designed.stages, m.parts, strict=True)]
    return m.plan, per


def _add_roofline(doc: dict[str, Any], bound: Any, why_not: str) -> None:
    """The roofline keys: `roofline_us`, `bound` (memory, vector or cube) and `ratio`
    (simulated / roofline) of the simulated kernel, or of each measured candidate of a sweep; the
    work and the three bounds under `roofline`; why there is none under `roofline_note`."""
    if "result" in doc:
        us = doc["result"].get("e2e_us")
    else:
        best = [c["e2e_us"] for s in doc.get("sweeps", []) for c in [s.get("best_by_cost")] if c and c.get("e2e_us")]
        us = min(best) if best else None
    doc["roofline"] = bound.to_dict(us) if bound is not None else None
    doc["roofline_us"] = bound.roofline_us if bound is not None else None
    doc["bound"] = bound.bound if bound is not None else None
    doc["ratio"] = bound.ratio(us) if bound is not None else None
    doc["roofline_note"] = why_not
    for s in doc.get("sweeps", []):
        for c in s.get("candidates", []):
            c["ratio"] = bound.ratio(c.get("e2e_us")) if bound is not None else None


def _roofline_line(doc: dict[str, Any], us: float | None) -> Any:
    from rich.text import Text

    if doc.get("roofline") is None:
        return Text(f"no roofline: {doc.get('roofline_note')}", style="dim")
    r = doc["roofline"]
    line = (f"roofline {r['roofline_us']:.3g} µs, {r['bound']}-bound (memory {r['memory_us']:.3g}, vector "
            f"{r['vector_us']:.3g}, cube {r['cube_us']:.3g} µs on {r['chip']})")
    ratio = us / r["roofline_us"] if us and r["roofline_us"] else None
    if ratio is not None:
        line += f": the kernel takes {ratio:.1f}x the roofline"
    return Text(line, style="bold" if ratio is None or ratio < 2 else "bold yellow")


def _show_fusion(fusion: dict[str, Any] | None) -> None:
    from rich.text import Text

    from pypto_tui.cli.render import console

    if not fusion:
        return
    for name in ("chosen", "unfused"):
        f = fusion[name]
        each = ", ".join(f"{u:.2f}" for u in f["kernel_us"] if u is not None)
        total = f"{f['e2e_us']:.2f} µs" if f["e2e_us"] is not None else f"{f['status']}: {f['reason']}"
        console.print(Text(f"{name} plan: {f['kernels']} kernel(s), {total}" + (f" ({each} µs)" if each else "")))
    if fusion.get("ratio") is not None:
        console.print(Text(f"chosen / unfused = {fusion['ratio']:.2f}", style="bold"))


def _show_sim(doc: dict[str, Any], reports: list[Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import console

    if doc.get("picked"):
        k = doc["picked"]
        where = f" in {k['submodule']}" if k["submodule"] else ""
        console.print(Text(f"kernel {k['index']} ({k['ops']}){where}, priced alone", style="bold"))
    if "result" in doc:
        r = doc["result"]
        if r.get("status") == "ok":
            what = (f"{doc['kernel']}" if doc.get("kernel") else
                    f"tile {tuple(doc['tile'])}, loop_count {doc['loop_count'] or '-'}")
            console.print(Text(f"{what}: "
                               f"{r['e2e_us']:.2f} µs, {r['tasks']} tasks (compile {r.get('compile_s') or 0:.2f} s, "
                               f"wall {r.get('wall_s') or 0:.1f} s)", style="bold green"))
            kernels = r.get("kernels") or []
            if len(kernels) > 1:
                for i, k in enumerate(kernels, 1):
                    console.print(Text(f"  kernel {i}: {k['e2e_us']:.2f} µs, {k['tasks']} tasks"))
            console.print(_roofline_line(doc, r.get("e2e_us")))
            _show_fusion(doc.get("fusion"))
        else:
            console.print(Text(f"{r.get('status')}: {r.get('reason') or r.get('error')}", style="bold red"))
        return
    fastest = [x.best_by_cost.e2e_us for x in reports if x.best_by_cost and x.best_by_cost.e2e_us]
    console.print(_roofline_line(doc, min(fastest) if fastest else None))
    roof = doc.get("roofline_us")
    for rep in reports:
        t = Table(title=f"{rep.sweep} sweep: {rep.simulations} simulation(s), {rep.qualified} qualified",
                  title_justify="left")
        for col in ("candidate", "rules' verdict", "estimate", "cost model", "x roofline", "tasks", "compile s"):
            t.add_column(col, no_wrap=col != "rules' verdict")
        for row in rep.rows:
            if not row.measured:
                continue
            mark = ""
            if rep.best_by_cost is row:
                mark += " ⚡fastest"
            if rep.best_by_rules is row:
                mark += " ★rules"
            if rep.best_by_estimate is row:
                mark += " ◆estimate"
            cost = (f"{row.e2e_us:.2f} µs" if row.e2e_us is not None else
                    Text(f"{row.status}: {row.reason or ''}"[:60], style="red"))
            t.add_row(row.label + mark, Text(row.rule_verdict, style="green" if row.qualified else "yellow"),
                      f"{row.estimate_us:.2f} µs" if row.estimate_us is not None else "-", cost,
                      f"{row.e2e_us / roof:.1f}x" if roof and row.e2e_us else "-",
                      str(row.tasks or "-"), f"{row.compile_s:.2f}" if row.compile_s else "-")
        console.print(t)
        for label, pick in (("rules' pick", rep.best_by_rules), ("estimate's pick", rep.best_by_estimate)):
            if pick is not None and not pick.measured:
                est = f"estimated {pick.estimate_us:.2f} µs, " if pick.estimate_us is not None else ""
                console.print(Text(f"{label} {pick.label}: {est}not measured", style="dim"))
        for line in rep.disagreements:
            console.print(Text("disagreement: " + line, style="bold yellow"))
        for line in rep.notes:
            console.print(Text(line, style="dim"))


@handles_input_errors
@suite_dispatch("verify")  # a folder of tasks runs as a suite (suite_cmd.py)
def verify(
    task: TaskArg,
    kernel: Annotated[Path | None, typer.Option("--kernel", help="Verify this kernel module (any file that defines "
                                                "ModelNew with Model's __init__ signature) instead of the generated "
                                                "one.", show_default=False)] = None,
    scale: Annotated[str, typer.Option("--scale", help="small (reduced shapes that keep the tile and loop count, "
                                       "default) or full (the task's own shapes).")] = "small",
    tile: Annotated[str | None, typer.Option("--tile", help="Verify this tile (default: the recommended one).",
                                             show_default=False)] = None,
    loop_count: Annotated[int | None, typer.Option("--loop-count", help="Use this loop count.", min=1,
                                                   max=MAX_DIM, show_default=False)] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds the verification may take.", min=1)] = 600.0,
    memory_mb: Annotated[int | None, typer.Option("--memory-mb", help="Address-space cap of the worker.", min=1,
                                                  show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached results.")] = False,
    criterion: Annotated[str | None, typer.Option("--criterion", help="How outputs are judged (the pack's "
                                                  "verify.toml): kernelbench (default: every element within "
                                                  "atol = rtol = 1e-4 for fp32, 1e-2 for fp16/bf16) or "
                                                  "kernelbench-v0.1 (1e-2 for every dtype).",
                                                  show_default=False)] = None,
    trials: Annotated[int | None, typer.Option("--trials", help="Input seeds; every one must pass (default: the "
                                               f"pack's, 2; at most {MAX_TRIALS}).", min=1, max=MAX_TRIALS,
                                               show_default=False)] = None,
    sizes: Annotated[int | None, typer.Option("--sizes", help="Test sizes; each must pass: 2 adds a second size "
                                              "at another tile count on every counted axis, 1 is a quicker check "
                                              "(default: the pack's, 2).", min=1, max=MAX_SIZES,
                                              show_default=False)] = None,
    per_kernel: Annotated[bool, typer.Option("--per-kernel", help="A module of several kernels: verify each "
                                             "kernel on its own first (its own test shapes, random inputs and "
                                             "worker, two at a time, against its part of the task's graph), then "
                                             "the module end to end (a task of one kernel: verified as a "
                                             "whole).")] = False,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", metavar="ADDRESS", show_default=False, help="Run on this Dask scheduler's workers "
        "(tcp://HOST:8786; the [cluster] extra): with a folder of tasks, the tasks; with one task and "
        "--per-kernel, its kernels.")] = None,
) -> None:
    """Run a kernel through pypto's interpreter and every compiler pass it checks, and compare it
    with the torch baseline (the generated kernel, or --kernel FILE).

    This EXECUTES the task file (its Model is the baseline; a task file is code) and the kernel
    file, in a worker subprocess of its own process group, killed whole at --timeout."""
    from pypto_tui.sim.verification import Criterion
    from pypto_tui.sim.verification import verify as run_verify

    if scale not in ("small", "full"):
        raise InputError(f"--scale {scale!r}: use small or full")
    if kernel is not None and (tile or loop_count):
        raise InputError("--tile and --loop-count choose the generated kernel's design; with --kernel the "
                         "kernel file decides: drop them")
    if per_kernel and kernel is not None:
        raise InputError("--per-kernel verifies the generated module's kernels; with --kernel drop it")
    if scheduler is not None and not per_kernel:
        raise InputError("--scheduler with one task file runs its kernels on the cluster: add --per-kernel (or "
                         "give a folder of tasks)")
    p = _pipeline(task, kb, tile, loop_count, front_end=front_end, trace_timeout=trace_timeout)
    judged = Criterion(criterion, trials, sizes)
    p.kb.verify.get(criterion)  # an unknown name is refused before anything runs
    if per_kernel and not _is_module(p):
        # its one kernel is the whole: verified as it is, so a folder of tasks takes --per-kernel for every task
        note(f"--per-kernel: {task.name} is one kernel, verified as a whole")
        per_kernel = False
    if kernel is not None or p.contract().supported or _is_module(p):
        _require_sim()
        what = f"{task} and {kernel}" if kernel is not None else str(task)
        note(f"verify executes the code in {what} (the baseline; a task file is code: run only files you "
             f"trust), in a subprocess of its own process group, stopped after {timeout:g} s")
    from pypto_tui.cli.progress import StageSpinner, workers_end_with_us

    with workers_end_with_us(), StageSpinner(f"verify {kernel.name if kernel else task.name}") as spinner:
        if per_kernel:
            from pypto_tui.sim.per_kernel import verify_per_kernel

            runner = _cluster_runner(scheduler, timeout, not no_cache) if scheduler is not None else None
            try:
                report = verify_per_kernel(p, scale=scale, timeout_s=timeout, cache=not no_cache,
                                           memory_limit_mb=memory_mb, status=spinner.stage, criterion=judged,
                                           run=runner)
            finally:
                if runner is not None:
                    runner.close()
        else:
            report = run_verify(p, scale=scale, timeout_s=timeout, cache=not no_cache,
                                memory_limit_mb=memory_mb, status=spinner.stage, kernel=kernel, criterion=judged)
    if json_out:
        emit_json({**report.to_dict(), "front_end": p.design.front_end})
    else:
        _show_verify(task, report)
    raise typer.Exit(Exit.OK if report.passed else Exit.FINDINGS)


def _cluster_runner(address: str, timeout: float, cache: bool) -> Any:
    """--per-kernel --scheduler: each kernel's job on a Dask worker (the suite's cluster)."""
    from pypto_tui.suite.dask_pool import DaskJobRunner

    runner = DaskJobRunner(address, timeout_s=timeout, cache=cache)
    note(f"verify --per-kernel: each kernel on {runner.describe()}")
    return runner


def _is_module(p: Any) -> bool:
    """The task is a chain the planner splits into kernels (verify runs the whole module)."""
    from pypto_tui.design import module_stages, split_by_graph

    try:
        if p.contract().supported:
            return split_by_graph(p) is not None
        return module_stages(p) is not None
    except InputError:
        return False


def _kernel_line(v: dict[str, Any]) -> Any:
    """One kernel's verdict on its own (--per-kernel): where it ran, what it checked, what it cost."""
    from rich.text import Text

    ok = v["verdict"] == "pass"
    shapes = ", ".join(f"{k}={tuple(s)}" for k, s in v["shapes"].items()) or "-"
    ran = (f"{v['passes_checked']} of {v['passes_expected']} passes, max abs err {v['max_abs_err']}, "
           f"{v['seconds']} s, peak RSS {v['peak_rss_mb']} MB" if v["status"] else "")
    text = f"{v['verdict'].upper()} ({v['ops']}) at {shapes}" + ("" if ok else f": {v['reason']}") + (
        f"; {ran}" if ran else "")
    return Text(text, style="green" if ok else "red")


def _show_verify(task: Path, report: Any) -> None:
    from rich.text import Text

    from pypto_tui.cli.render import console, dims, kv_table

    verdict = Text("PASS" if report.passed else ("FAIL" if report.supported else "UNSUPPORTED"),
                   style="bold green" if report.passed else "bold red")
    asked = f" (asked {dims(report.design_tile)} / {report.design_loop_count or '-'})" if not report.design_kept else ""
    checked = ", ".join(report.passes_checked) or "-"
    rows: list[tuple[str, Any]] = [
        ("verdict", verdict), ("reason", report.reason),
        ("kernel", report.kernel),
        ("shapes run", ", ".join(f"{k}={tuple(v)}" for k, v in report.shapes.items()) or "-"),
    ]
    if report.kernels > 1:
        rows.append(("kernels", f"{report.kernels} (one module: every kernel's passes checked)"))
    if report.sizes:
        rows.append(("sizes", ", ".join(f"{n} {a} -> {b}" for n, (a, b) in report.sizes.items())))
    if report.shapes_why:
        rows.append(("why these", report.shapes_why))
    for i, t in enumerate(report.size_trials[1:], start=2):  # the first is `shapes run`
        at = ", ".join(f"{k}={tuple(s)}" for k, s in t["shapes"].items())
        rows.append((f"size {i}", Text(f"{'PASS' if t['passed'] else 'FAIL'} at {at}: {t['why']}",
                                       style="green" if t["passed"] else "red")))
    for v in report.kernel_verdicts:  # --per-kernel: each kernel on its own, at its own shapes
        rows.append((f"K{v['index']} alone", _kernel_line(v)))
    if report.kernel_designs:  # a module: each kernel has its own tile and loop
        rows += [(f"K{k['kernel']} tile / loop",
                  f"{dims(tuple(k['tile'])) if k['tile'] else '(its pattern sets it)'} / {k['loop_count'] or '-'}"
                  f"  ({k['ops']})") for k in report.kernel_designs]
    else:
        rows.append(("tile / loop", f"{dims(report.tile)} / {report.loop_count or '-'}{asked}"))
    rows += [
        ("stages checked", f"{len(report.passes_checked)} of {len(report.passes_expected)}: {checked}"
         if report.passes_expected else "-"),
    ]
    if report.first_failing_pass:
        rows.append(("first failing", Text(report.first_failing_pass, style="bold red")))
    if report.missing_passes:
        rows.append(("no row for", Text(", ".join(report.missing_passes), style="bold red")))
    rows += [("max abs err", report.max_abs_err), ("max rel err", report.max_rel_err),
             ("failing share", report.fail_share)]
    if report.criterion:
        tol = ", ".join(f"{d} atol {a:g} rtol {r:g}" for d, (a, r) in report.tolerances.items())
        rows.append(("criterion", f"{report.criterion}: every element ({tol}); {report.trials} trial(s)"))
    rows.append(("design kept", "-" if not report.supported else "yes" if report.design_kept
                 else Text("no (see notes)", style="yellow")))
    rows += [("changed", Text(c, style="yellow")) for c in report.changes]
    rows += [("note", Text(n, style="dim")) for n in report.notes]
    console.print(kv_table(rows, title=f"verify {task}"))
