"""`kb list|show|validate|checks`: read the knowledge pack, and trace each rule to the code."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.catalogue import APPLIER_NAMES, CHECK_NAMES, module_of
from pypto_tui.cli.common import JsonOption, KbOption, emit_json, fail, handles_input_errors, load_kb
from pypto_tui.kb import Rule, load_pack, resolve_pack_dir

kb_app = typer.Typer(help="The knowledge pack: its rules, and where the code checks each one.",
                     no_args_is_help=True)


def _where(rule: Rule) -> list[str]:
    return ([f"{module_of(name)}:CHECKS[{name!r}]" for name in rule.enforced_by]
            + [f"{module_of(name)}:APPLIES[{name!r}]" for name in rule.applied_by])


def rule_dict(rule: Rule) -> dict[str, object]:
    from pypto_tui.proof import rule_examples

    return {
        "id": rule.id, "kind": rule.kind, "severity": rule.severity, "step": rule.step,
        "source": rule.source, "authority": rule.authority, "statement": rule.statement,
        "explanation": rule.explanation, "enforced_by": list(rule.enforced_by), "advice": rule.advice,
        "where": _where(rule), "checked_by": list(rule.enforced_by), "applied_by": list(rule.applied_by),
        "examples": rule_examples(rule),
    }


def _proof_text(rule: Rule) -> str:
    """`checked by` cell: each check with its (valid/invalid) example counts, then the generators."""
    from pypto_tui.proof import example_counts

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

    from pypto_tui.cli.render import LEVEL_STYLE, console

    t = Table(title=f"pack '{pack.name}' {pack.version}: {len(rules)} rules", title_justify="left")
    for col in ("id", "kind", "sev", "step", "whose", "statement", "checked by (valid/invalid examples)"):
        t.add_column(col, no_wrap=col in ("id", "kind", "sev", "step", "whose"))
    for r in rules:
        t.add_row(r.id, r.kind, f"[{LEVEL_STYLE[r.severity]}]{r.severity}[/]", r.step, r.authority, r.statement,
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

    from pypto_tui.cli.render import console

    src = pack.sources[rule.source]
    proof = "advice (not checked)" if rule.advice else _proof_text(rule).replace("\n", ", ")
    body = (f"[bold]{rule.statement}[/]\n\n{rule.explanation}\n\n"
            f"[dim]kind[/] {rule.kind}   [dim]severity[/] {rule.severity}   [dim]step[/] {rule.step}\n"
            f"[dim]source[/] {src.title} ({rule.authority})\n"
            f"[dim]checked by[/] {proof}\n"
            f"[dim]where[/] {', '.join(_where(rule)) or '-'}")
    console.print(Panel(body, title=rule.id, title_align="left"))


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
    pack = load_pack(path)
    advice = sum(1 for r in pack.rules.values() if r.advice)
    doc = {"valid": True, "pack": pack.name, "version": pack.version, "path": str(pack.path),
           "rules": len(pack.rules), "advice": advice, "files": {k: str(v) for k, v in pack.files.items()}}
    if json_out:
        emit_json(doc)
    else:
        typer.echo(f"ok: pack '{pack.name}' {pack.version} at {pack.path}: {len(pack.rules)} rules "
                   f"({len(pack.rules) - advice} checked, {advice} advice)")


@kb_app.command("checks")
def list_checks(json_out: JsonOption = False) -> None:
    """Every check name a pack's enforced_by may use (and generator name for applied_by), with its module."""
    from pypto_tui.proof import example_counts

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
