"""`kb list|show|validate|checks|ops`: read the knowledge pack, and trace each rule to the code."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.catalogue import APPLIER_NAMES, CHECK_NAMES, module_of
from pypto_tui.cli.common import JsonOption, KbOption, emit_json, fail, handles_input_errors, load_kb, warn
from pypto_tui.kb import Rule, load_pack, resolve_pack_dir

kb_app = typer.Typer(help="The knowledge pack: its rules, and where the code checks each one.",
                     no_args_is_help=True)


def _where(rule: Rule) -> list[str]:
    return ([f"{module_of(name)}:CHECKS[{name!r}]" for name in rule.enforced_by]
            + [f"{module_of(name)}:APPLIES[{name!r}]" for name in rule.applied_by])


def rule_dict(rule: Rule) -> dict[str, object]:
    from pypto_tui.cli.proof import rule_examples

    return {
        "id": rule.id, "kind": rule.kind, "severity": rule.severity, "step": rule.step,
        "source": rule.source, "authority": rule.authority, "statement": rule.statement,
        "explanation": rule.explanation, "enforced_by": list(rule.enforced_by), "advice": rule.advice,
        "where": _where(rule), "checked_by": list(rule.enforced_by), "applied_by": list(rule.applied_by),
        "examples": rule_examples(rule),
    }


def _proof_text(rule: Rule) -> str:
    """`checked by` cell: each check with its (valid/invalid) example counts, then the generators."""
    from pypto_tui.cli.proof import example_counts

    if rule.advice and not rule.enforced_by and not rule.applied_by:
        return "advice"
    counts = example_counts()
    parts = [f"{n} ({counts.get(n, (0, 0))[0]}/{counts.get(n, (0, 0))[1]})" for n in rule.enforced_by]
    parts += [f"applied: {n}" for n in rule.applied_by]
    return "\n".join(parts)


@kb_app.command("list")
@handles_input_errors
def list_rules(
    step: Annotated[str | None, typer.Option("--step", help="Only rules of this step.", show_default=False)] = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Every rule: id, kind, severity, whose rule it is, and the check that enforces it (or 'advice')."""
    pack = load_kb(kb)
    rules = [r for r in pack.rules.values() if step is None or r.step == step]
    if json_out:
        emit_json({"pack": pack.name, "version": pack.version, "path": str(pack.path),
                   "rules": [rule_dict(r) for r in rules]})
        return
    from rich.table import Table
    from rich.text import Text

    from pypto_tui.cli.render import LEVEL_STYLE, console, narrow, piped

    if piped():  # one tab-separated line per rule, as wide as its own text (a padded table was 1113 wide)
        from pypto_tui.errors import one_line

        lines = ["\t".join(("id", "kind", "severity", "step", "whose", "statement", "checked by"))]
        lines += ["\t".join(one_line(" ".join(str(v).split())) for v in (
            r.id, r.kind, r.severity, r.step, r.authority, r.statement, _proof_text(r).replace("\n", ", ")))
            for r in rules]
        sys.stdout.write("\n".join(lines) + "\n")
        return
    if narrow():  # a narrow terminal: one block per rule, nothing cut
        from rich.padding import Padding

        console.print(Text(f"pack '{pack.name}' {pack.version}: {len(rules)} rules", style="bold"))
        for r in rules:
            checked = _proof_text(r).replace("\n", ", ")
            console.print(Text.assemble((r.id, "bold"), f"  {r.kind} · ", (r.severity, LEVEL_STYLE[r.severity]),
                                        f" · {r.step} · {r.authority} · checked by {checked}"))
            console.print(Padding(Text(r.statement), (0, 0, 0, 2)))
        return
    t = Table(title=f"pack '{pack.name}' {pack.version}: {len(rules)} rules", title_justify="left")
    for col in ("id", "kind", "sev", "step", "whose", "statement", "checked by (valid/invalid examples)"):
        t.add_column(col, no_wrap=col in ("id", "kind", "sev", "step", "whose"))
    for r in rules:
        t.add_row(r.id, r.kind, Text(r.severity, style=LEVEL_STYLE[r.severity]), r.step, r.authority, r.statement,
                  _proof_text(r))
    console.print(t)


@kb_app.command("show")
@handles_input_errors
def show_rule(
    rule_id: Annotated[str, typer.Argument(help="A rule id, e.g. P4.tile-budget.")],
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """One rule in full: the statement, the explanation, its source and where it is checked."""
    pack = load_kb(kb)
    rule = pack.rule(rule_id)
    if rule is None:
        close = [r for r in pack.rules if rule_id.lower() in r.lower()] or list(pack.rules)[:5]
        raise fail(f"no rule '{rule_id}' in pack '{pack.name}': try {', '.join(close[:5])} (`pypto-tui kb list`)")
    if json_out:
        emit_json({"rule": rule_dict(rule)})
        return
    from rich.panel import Panel
    from rich.text import Text

    from pypto_tui.cli.render import console

    src = pack.sources[rule.source]
    proof = "advice (not checked)" if rule.advice else _proof_text(rule).replace("\n", ", ")
    body = Text.assemble(
        (rule.statement, "bold"), f"\n\n{rule.explanation}\n\n",
        ("kind", "dim"), f" {rule.kind}   ", ("severity", "dim"), f" {rule.severity}   ", ("step", "dim"),
        f" {rule.step}\n", ("source", "dim"), f" {src.title} ({rule.authority})\n", ("checked by", "dim"),
        f" {proof}\n", ("where", "dim"), f" {', '.join(_where(rule)) or '-'}")
    # a paragraph has no natural width: piped (a 400-column console) it is wrapped at 100
    width = None if console.is_terminal else min(console.width, 100)
    console.print(Panel(body, title=rule.id, title_align="left", width=width))


@kb_app.command("validate")
@handles_input_errors
def validate(
    directory: Annotated[Path | None, typer.Argument(help="Pack folder (default: the resolved pack).",
                                                     show_default=False)] = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Validate a pack against the schema; a bad pack is refused with file, key and reason (exit 2)."""
    path = directory or resolve_pack_dir(kb)
    pack = load_pack(path, thorough=True)
    advice = sum(1 for r in pack.rules.values() if r.advice)
    doc = {"valid": True, "pack": pack.name, "version": pack.version, "path": str(pack.path),
           "rules": len(pack.rules), "advice": advice, "files": {k: str(v) for k, v in pack.files.items()},
           "warnings": list(pack.warnings)}
    for w in pack.warnings:
        warn(w)
    if json_out:
        emit_json(doc)
    else:
        typer.echo(f"ok: pack '{pack.name}' {pack.version} at {pack.path}: {len(pack.rules)} rules "
                   f"({len(pack.rules) - advice} checked, {advice} advice)")


@kb_app.command("checks")
def list_checks(json_out: JsonOption = False) -> None:
    """Every check name a pack's enforced_by may use (and generator name for applied_by), with its module."""
    from pypto_tui.cli.proof import example_counts

    counts = example_counts()
    names = sorted(CHECK_NAMES)
    if json_out:
        emit_json({"checks": [{"name": n, "module": module_of(n), "examples": {"valid": counts[n][0],
                                                                                "invalid": counts[n][1]}}
                              for n in names],
                   "appliers": [{"name": n, "module": module_of(n)} for n in sorted(APPLIER_NAMES)]})
        return
    for n in names:
        typer.echo(f"{n:28} {module_of(n):22} {counts[n][0]} valid / {counts[n][1]} invalid examples")
    for n in sorted(APPLIER_NAMES):
        typer.echo(f"{n:28} {module_of(n):22} applies rules (a generator)")


@kb_app.command("ops")
def list_ops(json_out: JsonOption = False) -> None:
    """Every operator the readers know: its role, the torch spellings and the ATen operators it is read from.
    A task whose operator is not here is refused by name; this is the list to look it up in."""
    from pypto_tui.ops.registry import REGISTRY

    kinds = sorted(REGISTRY.values(), key=lambda k: (k.role, k.name))
    if json_out:
        emit_json({"ops": [{"name": k.name, "role": k.role, "pattern": k.pattern, "functions": list(k.functions),
                            "methods": list(k.methods), "modules": list(k.modules), "aten": list(k.aten)}
                           for k in kinds]})
        return
    for k in kinds:
        spellings = ", ".join([*k.functions, *(f".{m}" for m in k.methods), *(f"nn.{m}" for m in k.modules)])
        typer.echo(f"{k.name:28} {k.role:12} {spellings or '-'}")


@kb_app.command("calibrate")
@handles_input_errors
def calibrate(
    tasks: Annotated[list[str], typer.Argument(help="KernelBench task files to measure (their families get fits); "
                                               "TASK:tiles or TASK:loops runs only that sweep for it.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for the calibrated pack (extends the default).")],
    sweep: Annotated[str, typer.Option("--sweep", help="tiles, loops or both: the exhaustive sweeps to run.")] = "both",
    ranking: Annotated[str, typer.Option("--ranking", help="What the new pack's recommendation follows: estimate "
                                         "(the fitted estimate) or rules (the documents' order).")] = "estimate",
    jobs: Annotated[int, typer.Option("--jobs", help="Compiles in parallel (fewer when memory is short).", min=1)] = 2,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per compile.", min=1)] = 900.0,
    time_budget: Annotated[float | None, typer.Option("--time-budget", help="Stop measuring after this many seconds "
                                                      "and fit what finished.", min=1, show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace the pack files in a folder not empty.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Ignore cached results.")] = False,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Measure every qualified candidate of TASKS with the compiler (SIM), fit the cost estimate per
    family to the runs, and write a pack that extends the default with the fitted numbers and the
    pypto version measured on. Runs the tasks' kernels; results are cached."""
    from pypto_tui.errors import InputError
    from pypto_tui.vocabulary import RANKINGS

    if sweep not in ("tiles", "loops", "both"):
        raise InputError(f"--sweep {sweep!r}: use tiles, loops or both")
    if ranking not in RANKINGS:
        raise InputError(f"--ranking {ranking!r}: use {' or '.join(RANKINGS)}")
    kinds = ("tiles", "loops") if sweep == "both" else (sweep,)
    plan: list[tuple[Path, tuple[str, ...]]] = []
    for item in tasks:
        path, _, only = item.rpartition(":")
        if only in ("tiles", "loops", "both") and path and not Path(item).is_file():
            plan.append((Path(path), ("tiles", "loops") if only == "both" else (only,)))
        else:
            plan.append((Path(item), kinds))
    missing = [str(t) for t, _ in plan if not t.is_file()]
    if missing:
        raise InputError(f"no such task file: {', '.join(missing)}")
    pack = load_kb(kb)
    from pypto_tui.sim.calibrate import calibrate as run
    from pypto_tui.sim.calibrate import check_out_dir

    check_out_dir(out, force)
    from pypto_tui.sim.availability import require_sim

    require_sim()
    from pypto_tui.cli.progress import SweepBar, workers_end_with_us
    from pypto_tui.sim.runner import StopSignal

    with workers_end_with_us(), SweepBar("calibrating", enabled=not json_out) as bar:
        result = run(pack, plan, out, ranking=ranking, force=force, jobs=jobs, timeout_s=timeout,
                     cache=not no_cache, progress=bar.tick, status=bar.stage, stop=StopSignal(time_budget),
                     forecast=lambda f: bar.announce(f.text()), on_task=lambda name: bar.announce(f"measuring {name}"))
    if json_out:
        emit_json(result.to_dict())
        return
    from rich.table import Table

    from pypto_tui.cli.render import console

    t = Table(title=f"cost estimate fitted on pypto {result.pypto} -> {out}", title_justify="left")
    for col in ("family", "runs", "tasks", "error (within a task)", "worst", "coefficients"):
        t.add_column(col, no_wrap=col != "coefficients")
    for name, f in sorted(result.fits.items()):
        coef = ", ".join(f"{k} {v:+.3f}" for k, v in f.coefficients.items() if v)
        t.add_row(name, str(f.samples), str(len(f.tasks)), f"±{f.error:.3f} (log)", f"{f.worst:.3f}", coef)
    console.print(t)
    for task in result.tasks:
        if task.skipped:
            console.print(f"[yellow]{task.task}: skipped ({task.skipped})[/]")
        for note in task.notes:
            console.print(f"[dim]{task.task}: {note}[/]")
    if result.kept:
        console.print(f"[dim]kept from the base pack: {', '.join(sorted(result.kept))}[/]")
    console.print(f"use it with --kb {out} (ranking = \"{result.ranking}\")")
