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

from pypto_tui.errors import InputError


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

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = Exit.BAD_INPUT) -> typer.Exit:
    """Print one line to stderr and return the Exit to raise."""
    sys.stderr.write(f"pypto-tui: error: {message}\n")
    return typer.Exit(code)


def handles_input_errors(fn: F) -> F:
    """Turn InputError (and unreadable files) into one line on stderr and exit status 2."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InputError as exc:
            raise fail(str(exc)) from None
        except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
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
    from pypto_tui.kb import get_kb

    return get_kb(kb)
