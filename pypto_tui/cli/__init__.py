"""The `pypto-tui` command line: thin Typer commands over the core.

`pypto-tui` with no arguments opens the app; the one-shot commands never import Textual, and
`tile`/`loop` import neither Textual nor libcst (a test checks `sys.modules`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import Exit, KbOption, handles_input_errors
from pypto_tui.cli.guard import GuardedGroup


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


@app.callback(invoke_without_command=True)
def root(ctx: typer.Context) -> None:
    """With no command, open the app."""
    if ctx.invoked_subcommand is None:
        _run_app(None, None, None)


@app.command("ui")
@handles_input_errors
def ui(
    task: Annotated[Path | None, typer.Argument(help="A task file to start from.", show_default=False)] = None,
    kb: KbOption = None,
    session: Annotated[Path | None, typer.Option("--session", help="Reopen a saved design (JSON).",
                                                 show_default=False)] = None,
) -> None:
    """Open the app (optionally on a task file, a pack, or a saved session)."""
    _run_app(task, kb, session)


def _run_app(task: Path | None, kb: Path | None, session: Path | None) -> None:
    from pypto_tui.fileio import require_file
    from pypto_tui.kb import get_kb

    get_kb(kb)  # a bad pack is refused here, before the screen takes over
    if task is not None:
        require_file(task, "task file")
    from pypto_tui.screens.app import run_app

    raise typer.Exit(run_app(task=task, kb=kb, session=session))


def main() -> None:
    """Console-script entry point: maps Ctrl-C to 130 and keeps tracebacks away from users."""
    try:
        app()
    except KeyboardInterrupt:
        sys.stderr.write("pypto-tui: interrupted\n")
        sys.exit(Exit.INTERRUPTED)
