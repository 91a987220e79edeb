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

from pypto_tui.cli.common import Exit, JsonOption, KbOption, emit_json, handles_input_errors, load_kb
from pypto_tui.errors import InputError

TaskArg = Annotated[Path, typer.Argument(help="A KernelBench task file.")]


def _pipeline(task: Path, kb: Path | None, tile: str | None, loop_count: int | None, flavour: str | None = None):  # type: ignore[no-untyped-def]
    from pypto_tui.design import Design, Pipeline
    from pypto_tui.shapes import parse_dims

    if not task.is_file():
        raise FileNotFoundError(2, "no such task file", str(task))
    pack = load_kb(kb)
    design = Design(task=str(task), kb=str(kb) if kb else None, flavour=flavour,
                    tile=list(parse_dims(tile, "tile")) if tile else None, loop_count=loop_count)
    p = Pipeline(pack, design)
    if tile:
        from pypto_tui.shapes import parse_tile_for

        parse_tile_for(p.geometry().shape, tile)
    return p


def _require_sim() -> None:
    from pypto_tui.sim.availability import require_sim

    require_sim()


@handles_input_errors
def sim(
    task: TaskArg,
    tile: Annotated[str | None, typer.Option("--tile", help="Simulate this tile (default: the recommended one).",
                                             show_default=False)] = None,
    loop_count: Annotated[int | None, typer.Option("--loop-count", help="Use this loop count.", min=1,
                                                   show_default=False)] = None,
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
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Compile the design's kernel in SIM mode and report the cost-model time (µs) per candidate."""
    from pypto_tui.sim import design_runs as R
    from pypto_tui.sim.runner import run_one

    if sweep not in (None, "tiles", "loops", "both"):
        raise InputError(f"--sweep {sweep!r}: use tiles, loops or both")
    if (exhaustive or time_budget) and sweep is None:
        raise InputError("--exhaustive and --time-budget apply to a sweep: add --sweep tiles, loops or both")
    p = _pipeline(task, kb, tile, loop_count)
    _require_sim()
    from pypto_tui.cli.progress import SweepBar, workers_end_with_us
    from pypto_tui.sim.runner import StopSignal

    doc: dict[str, Any] = {"task": str(task), "tile": list(p.chosen_tile() or []), "loop_count": p.chosen_loop_count()}
    reports = []
    with workers_end_with_us(), SweepBar("simulating", enabled=not json_out) as bar:
        if sweep is None:
            r = run_one(R.cost_job(p, f"tile {p.chosen_tile()}"), jobs=jobs, timeout_s=timeout,
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
    failed = False
    if sweep is None:
        failed = doc["result"].get("status") != "ok"
    else:
        failed = not any(x.best_by_cost for x in reports)
    if json_out:
        emit_json(doc)
    else:
        _show_sim(doc, reports)
    raise typer.Exit(Exit.FINDINGS if failed else Exit.OK)


def _show_sim(doc: dict[str, Any], reports: list[Any]) -> None:
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import console

    if "result" in doc:
        r = doc["result"]
        if r.get("status") == "ok":
            console.print(Text(f"tile {tuple(doc['tile'])}, loop_count {doc['loop_count'] or '-'}: "
                               f"{r['e2e_us']:.2f} µs, {r['tasks']} tasks (compile {r.get('compile_s') or 0:.2f} s, "
                               f"wall {r.get('wall_s') or 0:.1f} s)", style="bold green"))
        else:
            console.print(Text(f"{r.get('status')}: {r.get('reason') or r.get('error')}", style="bold red"))
        return
    for rep in reports:
        t = Table(title=f"{rep.sweep} sweep: {rep.simulations} simulation(s), {rep.qualified} qualified",
                  title_justify="left")
        for col in ("candidate", "rules' verdict", "estimate", "cost model", "tasks", "compile s"):
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
                                                   show_default=False)] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds the verification may take.", min=1)] = 600.0,
    memory_mb: Annotated[int | None, typer.Option("--memory-mb", help="Address-space cap of the worker.",
                                                  show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached results.")] = False,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Run a kernel through pypto's interpreter and every compiler pass it checks, and compare it
    with the torch baseline (the generated kernel, or --kernel FILE). Runs the files' code."""
    from pypto_tui.sim.verification import verify as run_verify

    if scale not in ("small", "full"):
        raise InputError(f"--scale {scale!r}: use small or full")
    if kernel is not None and (tile or loop_count):
        raise InputError("--tile and --loop-count choose the generated kernel's design; with --kernel the "
                         "kernel file decides: drop them")
    p = _pipeline(task, kb, tile, loop_count)
    if kernel is not None or p.contract().supported:
        _require_sim()
    from pypto_tui.cli.progress import StageSpinner, workers_end_with_us

    with workers_end_with_us(), StageSpinner(f"verify {kernel.name if kernel else task.name}") as spinner:
        report = run_verify(p, scale=scale, timeout_s=timeout, cache=not no_cache, memory_limit_mb=memory_mb,
                            status=spinner.stage, kernel=kernel)
    if json_out:
        emit_json(report.to_dict())
    else:
        _show_verify(task, report)
    raise typer.Exit(Exit.OK if report.passed else Exit.FINDINGS)


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
        ("tile / loop", f"{dims(report.tile)} / {report.loop_count or '-'}{asked}"),
        ("stages checked", f"{len(report.passes_checked)} of {len(report.passes_expected)}: {checked}"
         if report.passes_expected else "-"),
    ]
    if report.first_failing_pass:
        rows.append(("first failing", Text(report.first_failing_pass, style="bold red")))
    if report.missing_passes:
        rows.append(("no row for", Text(", ".join(report.missing_passes), style="bold red")))
    rows += [("max abs err", report.max_abs_err), ("max rel err", report.max_rel_err),
             ("failing share", report.fail_share)]
    rows += [("changed", Text(c, style="yellow")) for c in report.changes]
    rows += [("note", Text(n, style="dim")) for n in report.notes]
    console.print(kv_table(rows, title=f"verify {task}"))
