"""`lint FILE... [--fix] [--task TASK.py] [--pypto 0.2.0|0.2.1] [--strict]`: the PyPTO lint over kernel modules.

Output is `file:line:col RULE-ID message`, one per line, like every linter; exit 1 when anything
is found. `--fix` rewrites only what is mechanical (scalar-left `-`/`/`, unary minus) and edits each
file in place (same inode, mode and hard links; a symlink's target is the file fixed); what it
cannot fix stays a finding. A file that cannot be read (a FIFO, not UTF-8, too large) is one
`io-error` finding, never counted as clean. `--pypto` picks the release the kernels are checked
against; the default, `auto`, infers it per file from what the file uses (a name or jit keyword
only a later release has) and else takes the installed pypto's (the pack's fallback without one),
and says which it took when that is not the default. `--strict` reports the rule documents' style
rules at their documents' severity. A file with no jit kernel is said to have none (nothing in it
was checked against the kernel rules); that alone is no finding (exit 0).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import Exit, JsonOption, KbOption, emit_json, handles_input_errors, load_kb
from pypto_tui.errors import InputError


@handles_input_errors
def lint(
    files: Annotated[list[str], typer.Argument(help="Kernel modules (or folders of them) to lint.")],
    fix: Annotated[bool, typer.Option("--fix", help="Rewrite the mechanical findings in place.")] = False,
    task: Annotated[Path | None, typer.Option("--task", help="The task file: check ModelNew.__init__ against "
                                              "Model.__init__.", show_default=False)] = None,
    flavour: Annotated[str | None, typer.Option("--flavour", help="API flavour (default: the pack's).",
                                                show_default=False)] = None,
    pypto: Annotated[str | None, typer.Option("--pypto", help="The PyPTO release to check against, e.g. 0.2.0 or "
                                              "0.2.1, or auto: inferred per file from what it uses, else the "
                                              "installed pypto's (the default).",
                                              show_default=False)] = None,
    strict: Annotated[bool | None, typer.Option("--strict/--no-strict", help="Report the rule documents' style "
                                                "rules at the documents' severity (default: the pack's setting).",
                                                show_default=False)] = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
) -> None:
    """Lint PyPTO kernel modules against the pack's rules (exit 1 when anything is found)."""
    from pypto_tui.fileio import read_text, rewrite_in_place
    from pypto_tui.lint.engine import FileFacts, expand_paths, fix_source, format_finding, lint_paths
    from pypto_tui.lint.profile import lint_settings
    from pypto_tui.lint.release import AUTO
    from pypto_tui.source_bounds import MAX_BYTES, MAX_KERNEL_BYTES

    if any(not name.strip() for name in files):
        # Path("") is the current folder: an empty argument would lint (and --fix) everything here
        raise InputError("an empty path was given: name the kernel modules or folders to lint (use . for this folder)")
    paths = [Path(name) for name in files]
    pack = load_kb(kb)
    pack.flavour(flavour)
    settings = lint_settings(pack)
    if pypto is None:
        pypto = settings.pypto or AUTO  # a release pinned in the pack's lint.toml wins over inference
    default = settings.profile(None).pypto
    release = AUTO if pypto == AUTO else settings.profile(pypto).pypto
    strict_mode = settings.strict if strict is None else strict
    for f in paths:
        if not f.exists() and not f.is_symlink():
            raise InputError(f"{f} does not exist: give kernel modules or folders to lint")
    task_source = read_text(task, "task file", MAX_BYTES) if task is not None else None
    targets = expand_paths(paths)
    fixed: list[str] = []
    if fix:
        for f in targets:
            try:
                text = read_text(f, "kernel module", MAX_KERNEL_BYTES)
            except InputError:
                continue  # reported below as the file's io-error finding
            new, _rest = fix_source(text, pack, path=str(f), flavour=flavour, task_source=task_source,
                                    pypto=release, strict=strict_mode)
            if new != text:
                real = rewrite_in_place(f, text, new)  # same inode, mode and links; symlinks followed
                fixed.append(str(f) if real == f.resolve() else f"{f} -> {real}")
    facts: dict[str, FileFacts] = {}
    findings = lint_paths(paths, pack, flavour, task_source, pypto=release, strict=strict_mode, facts=facts)
    used = sorted({fact.release for fact in facts.values()}) or [default if release == AUTO else release]
    no_kernel = [path for path, fact in facts.items() if fact.kernels == 0]
    if json_out:
        emit_json({"findings": [x.to_dict() for x in findings], "fixed": fixed, "count": len(findings),
                   "pypto": used[0] if len(used) == 1 else AUTO, "strict": strict_mode,
                   "files": {path: {"pypto": fact.release, "why": fact.why, "kernels": fact.kernels}
                             for path, fact in facts.items()},
                   "no_kernel": no_kernel})
    else:
        for path in fixed:
            typer.echo(f"fixed: {path}", err=True)
        if release == AUTO:
            for path, fact in facts.items():
                if fact.release != default:
                    typer.echo(f"{path}: linted as {fact.why}", err=True)
        for x in findings:
            typer.echo(format_finding(x))
        checked = len(facts) - len(no_kernel)
        if no_kernel and not checked:
            what = no_kernel[0] if len(no_kernel) == 1 else f"none of the {len(no_kernel)} files"
            typer.echo(f"no kernel to lint: {what} has no @pypto.frontend.jit function, so no kernel rule was "
                       "checked (lint the module that defines the kernel)", err=True)
        elif no_kernel:
            typer.echo(f"{len(no_kernel)} of {len(facts)} file(s) have no jit kernel: " + ", ".join(no_kernel[:3])
                       + (", ..." if len(no_kernel) > 3 else ""), err=True)
        if not findings and checked:
            typer.echo(f"clean: {len(targets)} file(s), no findings (pypto {', '.join(used)})", err=True)
    raise typer.Exit(Exit.FINDINGS if findings else Exit.OK)
