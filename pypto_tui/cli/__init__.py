"""The `pypto-tui` command line: thin Typer commands over the core.

`pypto-tui` with no arguments opens the app in a terminal; from a pipe or a script (stdin or stdout
not a terminal) it prints the help and exits 2, and `ui` says so in one line, instead of writing
escape codes into the pipe and waiting for keys. The one-shot commands never import Textual, and
`tile`/`loop` import neither Textual nor libcst (a test checks `sys.modules`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import Exit, FrontEndOption, KbOption, fail, handles_input_errors, note
from pypto_tui.cli.guard import GuardedGroup

NO_TERMINAL = ("the app needs a terminal, and stdin or stdout is not one (a pipe or a script): run it in a "
               "terminal, or use a one-shot command (see pypto-tui -h)")


def has_terminal() -> bool:
    """Whether the full-screen app can run: it reads keys from stdin and draws on stdout."""
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


class PyptoGroup(GuardedGroup):
    """The commands, in the order `-h` lists them; each module is imported when its command runs."""

    LAZY = {  # noqa: RUF012  (a class-level table, read-only)
        "tile": "pypto_tui.cli.calc:tile",
        "loop": "pypto_tui.cli.calc:loop",
        "contract": "pypto_tui.cli.contract_cmd:contract",
        "scaffold": "pypto_tui.cli.export_cmd:scaffold",
        "export": "pypto_tui.cli.export_cmd:export",
        "lint": "pypto_tui.cli.lint_cmd:lint",
        "sim": "pypto_tui.cli.sim_cmd:sim",
        "verify": "pypto_tui.cli.sim_cmd:verify",
        "kb": "pypto_tui.cli.kb_cmd:kb_app",
        "runs": "pypto_tui.cli.runs_cmd:runs_app",
    }


app = typer.Typer(
    cls=PyptoGroup,
    name="pypto-tui",
    help="A terminal kernel-design assistant for PyPTO: contract -> dimensions -> tiles -> loops -> kernel.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(value: bool) -> None:
    if value:
        from pypto_tui import __version__

        sys.stdout.write(f"pypto-tui {__version__}\n")
        raise typer.Exit(Exit.OK)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    version: Annotated[bool, typer.Option("--version", help="Print the version and exit.", is_eager=True,
                                          callback=_print_version)] = False,
) -> None:
    """With no command, open the app; without a terminal (a pipe, a script), print this help."""
    if ctx.invoked_subcommand is None:
        if not has_terminal():
            sys.stdout.write(ctx.get_help() + "\n")
            raise fail(NO_TERMINAL)
        _run_app(None, None, None)


@app.command("ui")
@handles_input_errors
def ui(
    task: Annotated[Path | None, typer.Argument(help="A task file to start from.", show_default=False)] = None,
    kb: KbOption = None,
    session: Annotated[Path | None, typer.Option("--session", help="Reopen a saved design (JSON).",
                                                 show_default=False)] = None,
    trust: Annotated[bool, typer.Option("--trust", help="Run the task file's code (self-check, verify) "
                                        "without asking first.")] = False,
    front_end: FrontEndOption = "static",
) -> None:
    """Open the app (optionally on a task file, a pack, or a saved session)."""
    _run_app(task, kb, session, trust, front_end)


def _run_app(task: Path | None, kb: Path | None, session: Path | None, trust: bool = False,
             front_end: str = "static") -> None:
    from pypto_tui.design import check_front_end
    from pypto_tui.fileio import require_file
    from pypto_tui.kb import get_kb

    get_kb(kb)  # a bad pack is refused here, before the screen takes over
    if task is not None:
        require_file(task, "task file")
    from pypto_tui.screens.app import build_app, run_app

    if check_front_end(front_end) == "traced" and task is not None:
        note(f"the app traces {task} (a task file is code: trace only files you trust), in a subprocess of its "
             "own process group")
    pypto_app = build_app(task=task, kb=kb, session=session, trust_task_code=trust,
                          front_end=front_end)  # a bad session is refused here
    if not has_terminal():
        raise fail(NO_TERMINAL)
    raise typer.Exit(run_app(pypto_app))


def main() -> None:
    """Console-script entry point: maps Ctrl-C to 130 and keeps tracebacks away from users."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("pypto-tui: interrupted\n")
        sys.exit(Exit.INTERRUPTED)
