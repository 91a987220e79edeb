"""`scaffold` (one task -> one module) and `export` (a folder of tasks -> a folder of modules).

Both refuse to overwrite without --force and write atomically (temporary file + rename), so an
interrupted export never leaves half a module and nothing the user saved is lost.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import (
    Exit,
    FrontEndOption,
    JsonOption,
    KbOption,
    TraceTimeoutOption,
    emit_json,
    handles_input_errors,
    load_kb,
    use_front_end,
)
from pypto_tui.errors import one_line

ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite existing files.")]
FlavourOpt = Annotated[str | None, typer.Option("--flavour", help="API flavour from the pack (default: the pack's "
                                                "default, pypto-0.2.0; docs: PyPTO's own idiom).", show_default=False)]
DynamicOpt = Annotated[str | None, typer.Option(
    "--dynamic-axis", metavar="N|none",
    help="Make axis N of the first input pypto.DYNAMIC: one kernel for every size of it, looping "
         "ceildiv(size, block) times with valid_shape for the last block. Default: the task's DYNAMIC_AXIS "
         "declaration, if any; 'none' keeps every axis static.", show_default=False)]


def _dynamic_axis(value: str | None) -> int | None:
    """--dynamic-axis N|none -> the design's value (None: follow the task; -1: static)."""
    from pypto_tui.errors import InputError

    if value is None:
        return None
    if value.strip().lower() == "none":
        return -1
    try:
        axis = int(value)
    except ValueError:
        raise InputError(f"--dynamic-axis {value!r}: give an axis number of the first input, or 'none'") from None
    if axis < 0:
        raise InputError(f"--dynamic-axis {axis}: give a non-negative axis number, or 'none'")
    return axis


@handles_input_errors
def scaffold(
    task: Annotated[Path, typer.Argument(help="A KernelBench task file.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Write the module here ('-' or "
                                                "nothing: print it).", show_default=False)] = None,
    force: ForceOpt = False,
    flavour: FlavourOpt = None,
    dynamic_axis: DynamicOpt = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Generate the PyPTO ModelNew module for one task."""
    from pypto_tui.export import scaffold_task

    if output is not None and str(output) == "-":  # the Unix spelling of standard output, never a file named '-'
        output = None
    pack = load_kb(kb)
    front_end = use_front_end(task, pack, front_end, trace_timeout)
    result = scaffold_task(task, pack, output, force=force, flavour=flavour, dynamic_axis=_dynamic_axis(dynamic_axis),
                           front_end=front_end)
    if json_out:
        emit_json(result.to_dict(with_source=output is None))
    elif not result.ok:
        typer.echo(one_line(f"{task}: {result.status}: {result.reason}"), err=True)
    elif output is None:
        typer.echo(result.source, nl=False)
    else:
        typer.echo(one_line(f"wrote {result.output} (pattern {result.pattern}, flavour {result.flavour})"), err=True)
    raise typer.Exit(Exit.OK if result.ok else Exit.FINDINGS)


@handles_input_errors
def export(
    tasks_dir: Annotated[Path, typer.Argument(help="A folder of task files.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The folder to write the modules to.")],
    force: ForceOpt = False,
    flavour: FlavourOpt = None,
    dynamic_axis: DynamicOpt = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Scaffold every task in a folder; one that cannot be scaffolded is reported and does not stop the rest."""
    from pypto_tui.export import export_dir

    pack = load_kb(kb)
    prepare = None
    if front_end != "static":
        from pypto_tui.design import check_front_end

        check_front_end(front_end)

        def prepare(task: Path) -> None:
            use_front_end(task, pack, front_end, trace_timeout)

    report = export_dir(tasks_dir, output, pack, force=force, flavour=flavour,
                        dynamic_axis=_dynamic_axis(dynamic_axis), front_end=front_end, prepare=prepare)
    if json_out:
        emit_json({**report.to_dict(), "front_end": front_end})
    else:
        from rich.table import Table
        from rich.text import Text

        from pypto_tui.cli.render import console, name_text, printable

        style = {"ok": "green", "unsupported": "yellow", "error": "bold red"}
        t = Table(title=name_text(f"export {tasks_dir} -> {output}"), title_justify="left")
        for col in ("task", "family", "pattern", "status", "reason"):
            t.add_column(col, no_wrap=col != "reason")
        for r in report.rows:
            t.add_row(name_text(Path(r.task).name), r.family or "-", r.pattern or "-",
                      Text(r.status, style=style[r.status]), printable(r.reason or ""))
        console.print(t)
        c = report.counts
        skipped = (f", {len(report.skipped)} skipped (kernel modules: they define ModelNew and no Model)"
                   if report.skipped else "")
        console.print(f"{c['ok']} written, {c['unsupported']} unsupported, {c['error']} failed{skipped} "
                      f"in {report.seconds:.2f} s")
    raise typer.Exit(Exit.FINDINGS if report.failed else Exit.OK)
