"""Errors that reach the user as one line and exit status 2.

Anything the user typed or pointed us at (a shape, a tile, a task file, a knowledge pack) is
reported through `InputError`: the CLI prints its message alone, with no traceback, and the app
shows it beside the field. The message must say what is wrong *and* how to fix it.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad input from the user: a malformed shape, a wrong-rank tile, an unknown dtype..."""


class PackError(InputError):
    """A knowledge pack that does not validate. The message names the file, the key and the reason."""

    def __init__(self, file: str, key: str, reason: str) -> None:
        self.file, self.key, self.reason = file, key, reason
        where = f"{file}: {key}" if key else file
        super().__init__(f"bad knowledge pack: {where}: {reason}")


class TaskFileError(InputError):
    """A task file that cannot be read as a KernelBench task (not Python, no Model, ...)."""


class Unsupported(Exception):
    """This design cannot be scaffolded; the message says why (reported, never raised to users)."""


def one_line(text: str) -> str:
    """`text` as one printable line: newlines, tabs and escape sequences a user typed into a value
    are shown escaped (`\\n`), so an error never spans lines or recolours the terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
