"""The CLI's outermost layer: however a run ends, the exit status is 0, 1 or 2 and an error is one line.

Click prints a usage error as four lines (usage, a hint, a blank line, the error) and lets any
other exception escape as a traceback with exit status 1, the code that means "the design has an
error-level finding". `GuardedGroup.main` runs the command in Click's non-standalone mode and maps
every ending itself:

- a usage error (unknown option, missing argument, a value Click refuses) -> one line, exit 2;
- an InputError that escaped a command -> its message, exit 2;
- anything unexpected (a bug, MemoryError, RecursionError) -> one line naming it, exit 2; the
  traceback only with PYPTO_TUI_DEBUG=1;
- a closed stdout (`| head`) -> quiet, exit 0; Ctrl-C -> exit 130.

Two checks hold for every command, so no option can forget them: an empty argument (`-o ''`, which
Python's Path turns into the current folder) is refused, and so is a number option given a value
that is not finite (`--timeout inf` is no time limit, `nan` compares false with every bound).

With `--json` on the command line, an exit-2 run also prints `{"error": ...}` on stdout, so a
script reading stdout always gets one JSON document.
"""

from __future__ import annotations

import copy
import errno
import math
import os
import sys
from collections.abc import Sequence
from typing import Any, ClassVar

import typer
from typer.core import TyperGroup

from pypto_tui.cli.common import Exit, click_exceptions, click_types, error_json, reset_notices
from pypto_tui.errors import InputError, one_line

DEBUG_ENV = "PYPTO_TUI_DEBUG"


class GuardedGroup(TyperGroup):
    """The root command group: Typer's, plus the endings above, plus commands built on demand.

    `LAZY` maps a command name to "module:attribute" (a function, or a Typer for a sub-group).
    Typer turns every registered command's signature into Click parameters before anything runs
    (a fifth of a one-shot `tile`'s start-up); a lazy command is imported and converted only when
    it is invoked, or listed by `-h`.
    """

    LAZY: ClassVar[dict[str, str]] = {}

    def list_commands(self, ctx: Any) -> list[str]:
        return [*super().list_commands(ctx), *(n for n in self.LAZY if n not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.LAZY:
            self.add_command(_build(cmd_name, self.LAZY[cmd_name]), cmd_name)
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            finite_numbers(cmd)
        return cmd

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """Typer suggests a close command name only among those already built: a mistyped lazy
        command (`tiel`) got no "did you mean" while a sub-group's did."""
        try:
            return super().resolve_command(ctx, args)
        except click_exceptions.UsageError as exc:
            if args and "Did you mean" not in exc.message:
                import difflib

                matches = difflib.get_close_matches(args[0], self.list_commands(ctx))
                if matches:
                    exc.message = f"{exc.message.rstrip('.')}. Did you mean {' or '.join(map(repr, matches))}?"
            raise

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,  # type: ignore[override]
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        argv = list(sys.argv[1:] if args is None else args)
        empty = empty_argument(argv)
        if empty is not None:
            sys.exit(_error(empty, "--json" in argv))
        code = run_guarded(lambda: super(GuardedGroup, self).main(argv, prog_name or "pypto-tui", complete_var,
                                                                   standalone_mode=False, **extra), argv)
        sys.exit(code)


def empty_argument(argv: Sequence[str]) -> str | None:
    """Why an argument is empty (the message), or None. `-o ''` would write into the current
    folder and a task path '' names no file: an empty value is never what was meant."""
    for i, arg in enumerate(argv):
        if arg == "--":
            return None
        option, eq, value = arg.partition("=")
        if arg.startswith("--") and eq and not value:
            return f"option {option} was given an empty value: give one (see pypto-tui -h)"
        if arg == "":
            before = argv[i - 1] if i and argv[i - 1].startswith("-") else ""
            what = f"option {before} was given an empty value" if before else "an argument is empty ('')"
            return f"{what}: give a file, a folder or a value (see pypto-tui -h)"
    return None


class _Finite:
    """Mixed into a Click number type: the value must be finite (inf and nan are refused)."""

    def convert(self, value: Any, param: Any, ctx: Any) -> Any:
        number = super().convert(value, param, ctx)  # type: ignore[misc]
        if isinstance(number, float) and not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)  # type: ignore[attr-defined]
        return number


_FINITE_TYPES: dict[type, type] = {}


def finite_numbers(cmd: Any) -> None:
    """Make every float option of `cmd` (and of its subcommands) refuse inf and nan. The type keeps
    its class (a subclass of it), so the help still shows its range."""
    if getattr(cmd, "_finite_numbers", False):
        return
    cmd._finite_numbers = True
    for param in getattr(cmd, "params", ()):
        kind = type(param.type)
        if isinstance(param.type, click_types.FloatParamType) and not isinstance(param.type, _Finite):
            finite = _FINITE_TYPES.setdefault(kind, type(f"Finite{kind.__name__}", (_Finite, kind), {}))
            typed = copy.copy(param.type)
            typed.__class__ = finite
            param.type = typed
    for sub in (getattr(cmd, "commands", None) or {}).values():
        finite_numbers(sub)


def _build(name: str, target: str) -> Any:
    """The Click command for one lazy entry, built the way Typer builds a registered one."""
    import importlib

    from typer.main import get_command_from_info, get_group_from_info
    from typer.models import CommandInfo, TyperInfo

    module, _, attr = target.partition(":")
    obj = getattr(importlib.import_module(module), attr)
    if isinstance(obj, typer.Typer):  # what app.add_typer(obj, name=name) would build
        return get_group_from_info(TyperInfo(obj, name=name), pretty_exceptions_short=True,
                                   suggest_commands=True, rich_markup_mode=None)
    return get_command_from_info(CommandInfo(name=name, callback=obj), pretty_exceptions_short=True,
                                 rich_markup_mode=None)


def run_guarded(call: Any, argv: Sequence[str]) -> int:
    """Run `call` (Click's main in non-standalone mode) and turn its ending into an exit status."""
    wants_json = "--json" in argv
    reset_notices()
    try:
        rv = call()
        return rv if isinstance(rv, int) and not isinstance(rv, bool) else Exit.OK
    except click_exceptions.NoArgsIsHelpError as exc:
        ctx = exc.ctx
        names = ", ".join(sorted(getattr(ctx.command, "commands", {}) or {})) if ctx else ""
        path = ctx.command_path if ctx else "pypto-tui"
        return _error(f"{path} needs a command ({names}): see {path} -h", wants_json)
    except click_exceptions.UsageError as exc:
        hint = f" (see {exc.ctx.command_path if exc.ctx is not None else 'pypto-tui'} -h)"
        return _error(f"{_usage_text(exc)}{hint}", wants_json)
    except click_exceptions.ClickException as exc:
        return _error(exc.format_message(), wants_json)
    except (getattr(click_exceptions, "Abort", typer.Abort), typer.Abort):
        sys.stderr.write("pypto-tui: interrupted\n")
        return Exit.INTERRUPTED
    except KeyboardInterrupt:
        sys.stderr.write("pypto-tui: interrupted\n")
        return Exit.INTERRUPTED
    except InputError as exc:
        return _error(str(exc), wants_json)
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            _quiet_stdout()
            return Exit.OK
        return _internal(exc, wants_json)
    except Exception as exc:  # the promise: never a traceback, never exit 1 for a crash (incl. MemoryError)
        return _internal(exc, wants_json)


def _usage_text(exc: click_exceptions.UsageError) -> str:
    text = exc.format_message().rstrip(".")
    return text[:1].lower() + text[1:] if text else "bad usage"


def _error(message: str, wants_json: bool) -> int:
    sys.stderr.write(f"pypto-tui: error: {one_line(message)}\n")
    if wants_json:
        error_json(message)
    return Exit.BAD_INPUT


def _internal(exc: BaseException, wants_json: bool) -> int:
    if os.environ.get(DEBUG_ENV):
        import traceback

        traceback.print_exception(exc)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return _error(f"internal error ({what}); please report it with the command line "
                  f"({DEBUG_ENV}=1 shows the traceback)", wants_json)


def _quiet_stdout() -> None:
    """stdout was closed by the reader (`| head`): stop Python complaining when it flushes at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
