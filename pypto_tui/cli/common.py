"""What every command shares: error handling, exit codes, the --kb/--json options, JSON output.

stdout carries data only (one JSON document with --json); errors go to stderr as one line
prefixed with the program name. Exit codes are a public contract: 0 fine, 1 the design has an
error-level finding, 2 bad input (with a message saying how to fix it, never a traceback).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

try:  # typer >= 0.27 vendors Click; older releases run on Click itself
    from typer._click import exceptions as click_exceptions
    from typer._click import types as click_types
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover
    from click import exceptions as click_exceptions  # type: ignore[no-redef]
    from click import get_current_context  # type: ignore[no-redef]
    from click import types as click_types  # type: ignore[no-redef]

from pypto_tui.errors import InputError, one_line


class Exit(IntEnum):
    OK = 0
    FINDINGS = 1
    BAD_INPUT = 2
    INTERRUPTED = 130


KbOption = Annotated[
    Path | None,
    typer.Option("--kb", help="Knowledge pack folder (default: $PYPTO_TUI_KB, then the bundled pack).",
                 show_default=False),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
FrontEndOption = Annotated[str, typer.Option(
    "--front-end", help="static: read forward with libcst (never runs it); traced: run the Model through "
    "torch.export in a subprocess of its own process group (EXECUTES the task file; cached by its content) and "
    "read the traced graph: nn.Sequential, submodules, loops, helpers, if.")]
TraceTimeoutOption = Annotated[float, typer.Option("--trace-timeout", help="Seconds tracing may take.", min=1)]
KernelIndexOption = Annotated[int | None, typer.Option(
    "--kernel-index", help="With a task the planner splits into several kernels: only the kernel at this position "
    "(0 is the first; `contract` lists them).", show_default=False, min=0)]
SubmoduleOption = Annotated[str | None, typer.Option(
    "--submodule", metavar="PATH", help="With a task the planner splits into several kernels: only the first "
    "kernel that runs in this submodule of the model (e.g. layer1.0; `contract` lists each kernel's).",
    show_default=False)]


def use_front_end(task: Path, pack: Any, front_end: str, timeout: float) -> str:
    """The front end the design takes (`Design.front_end`), checked. For `traced`, the task is traced here,
    after a note on stderr (the task's code runs) and with the user's timeout; the design pipeline's step 1
    then reads the trace from the cache. Nothing is imported for the static front end."""
    if front_end == "static":
        return front_end
    from pypto_tui.design import check_front_end
    from pypto_tui.fileio import require_file
    from pypto_tui.trace.tracer import traced_graph

    check_front_end(front_end)
    require_file(task, "task file")
    traced_graph(task, pack, timeout=timeout, announce=note)
    return front_end

F = TypeVar("F", bound=Callable[..., Any])


def _json_requested() -> bool:
    ctx = get_current_context(silent=True)
    return bool(ctx is not None and ctx.params.get("json_out"))


def error_json(message: str) -> None:
    """The --json answer of a run that ends with exit status 2: one document with "error"."""
    emit_json({"error": message})


def fail(message: str, code: int = Exit.BAD_INPUT) -> typer.Exit:
    """Print one line to stderr (and `{"error": ...}` on stdout with --json); return the Exit to raise."""
    sys.stderr.write(f"pypto-tui: error: {one_line(message)}\n")
    if code == Exit.BAD_INPUT and _json_requested():
        error_json(message)
    return typer.Exit(code)


_warned: set[str] = set()


def reset_notices() -> None:
    """A new run: every warning and note may be printed (once) again."""
    _warned.clear()


def warn(message: str) -> None:
    """One warning line on stderr, once per run (stdout stays data)."""
    if message not in _warned:
        _warned.add(message)
        sys.stderr.write(f"pypto-tui: warning: {one_line(message)}\n")


def note(message: str) -> None:
    """One informational line on stderr, once per run."""
    if message not in _warned:
        _warned.add(message)
        sys.stderr.write(f"pypto-tui: note: {one_line(message)}\n")


def handles_input_errors(fn: F) -> F:
    """Turn InputError (and unreadable files) into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        except UnicodeDecodeError as exc:
            raise fail(f"a file is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8") from None
        except OSError as exc:
            if exc.filename is None:
                raise
            raise fail(f"{exc.filename}: {exc.strerror}") from None

    return wrapper  # type: ignore[return-value]


def emit_json(doc: dict[str, Any]) -> None:
    doc = {"schema_version": 1, **doc}
    sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True, default=_default) + "\n")


def _default(obj: Any) -> Any:
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, tuple | set | frozenset):
        return list(obj)
    to_dict = getattr(obj, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def load_kb(kb: Path | None):  # type: ignore[no-untyped-def]
    """The resolved pack; what it holds but nobody reads (a misspelt key) is warned about on stderr."""
    from pypto_tui.kb import get_kb

    pack = get_kb(kb)
    for w in pack.warnings:
        warn(w)
    return pack


__all__ = ["Exit", "FrontEndOption", "JsonOption", "KbOption", "KernelIndexOption", "SubmoduleOption",
           "TraceTimeoutOption", "click_exceptions", "click_types",
           "emit_json", "error_json", "fail", "get_current_context", "handles_input_errors", "load_kb", "note",
           "reset_notices", "use_front_end", "warn"]
