"""`lint FILE... [--fix] [--task TASK.py] [--pypto 0.2.0|0.2.1] [--strict]`: the PyPTO lint over kernel modules.

Output is `file:line:col RULE-ID message`, one per line, like every linter; exit 1 when anything
is found. `--fix` rewrites only what is mechanical (scalar-left `-`/`/`, unary minus) and writes
each file back atomically; what it cannot fix stays a finding. `--pypto` picks the release the
kernels are checked against (default: the installed pypto's, else the pack's fallback);
`--strict` reports the rule documents' style rules at their documents' severity.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import Exit, JsonOption, KbOption, emit_json, handles_input_errors, load_kb
from pypto_tui.errors import InputError


@handles_input_errors
def lint(
    files: Annotated[list[Path], typer.Argument(help="Kernel modules (or folders of them) to lint.")],
    fix: Annotated[bool, typer.Option("--fix", help="Rewrite the mechanical findings in place.")] = False,
    task: Annotated[Path | None, typer.Option("--task", help="The task file: check ModelNew.__init__ against "
                                              "Model.__init__.", show_default=False)] = None,
    flavour: Annotated[str | None, typer.Option("--flavour", help="API flavour (default: the pack's).",
                                                show_default=False)] = None,
    pypto: Annotated[str | None, typer.Option("--pypto", help="The PyPTO release to check against, e.g. 0.2.0 or "
                                              "0.2.1 (default: the installed pypto's, else the pack's).",
                                              show_default=False)] = None,
    strict: Annotated[bool | None, typer.Option("--strict/--no-strict", help="Report the rule documents' style "
                                                "rules at the documents' severity (default: the pack's setting).",
                                                show_default=False)] = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Lint PyPTO kernel modules against the pack's rules (exit 1 when anything is found)."""
    from pypto_tui.design import write_atomic
    from pypto_tui.lint.engine import fix_source, format_finding, lint_paths
    from pypto_tui.lint.profile import lint_settings

    pack = load_kb(kb)
    pack.flavour(flavour)
    settings = lint_settings(pack)
    release = settings.profile(pypto).pypto
    strict_mode = settings.strict if strict is None else strict
    for f in files:
        if not f.exists():
            raise InputError(f"{f} does not exist: give kernel modules or folders to lint")
    task_source = task.read_text(encoding="utf-8") if task is not None else None
    fixed: list[str] = []
    if fix:
        for f in _py_files(files):
            text = f.read_text(encoding="utf-8")
            new, _rest = fix_source(text, pack, path=str(f), flavour=flavour, task_source=task_source,
                                    pypto=release, strict=strict_mode)
            if new != text:
                write_atomic(f, new, force=True)
                fixed.append(str(f))
    findings = lint_paths(files, pack, flavour, task_source, pypto=release, strict=strict_mode)
    if json_out:
        emit_json({"findings": [x.to_dict() for x in findings], "fixed": fixed, "count": len(findings),
                   "pypto": release, "strict": strict_mode})
    else:
        for path in fixed:
            typer.echo(f"fixed: {path}", err=True)
        for x in findings:
            typer.echo(format_finding(x))
        if not findings:
            typer.echo(f"clean: {len(_py_files(files))} file(s), no findings (pypto {release})", err=True)
    raise typer.Exit(Exit.FINDINGS if findings else Exit.OK)


def _py_files(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out
