"""Human output: rich tables with findings coloured by level. Imported only without --json."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from pypto_tui.errors import one_line
from pypto_tui.findings import Finding

LEVEL_STYLE = {"error": "bold red", "warn": "yellow", "info": "cyan", "ok": "green"}
LEVEL_MARK = {"error": "✗", "warn": "!", "info": "i", "ok": "✓"}

PIPE_WIDTH = 400
"""Width of the output when stdout is not a terminal: wide enough that no table cell is cut or
wrapped into a column of single letters (a pipe has no width; `| grep` wants one row per line)."""
NARROW = 100
"""Below this many columns the wide tables (kb list, loop) switch to a compact layout."""


class _TrimmedStdout:
    """stdout without the spaces Rich pads every line with up to the table's width (a piped
    `kb list` wrote lines of 800+ characters, most of them blanks). Whole lines are trimmed as
    they complete; sys.stdout is looked up on every write, so a caller that swaps it is followed."""

    def __init__(self) -> None:
        self._pending = ""

    def write(self, text: str) -> int:
        lines = (self._pending + text).split("\n")
        self._pending = lines.pop()
        if lines:
            sys.stdout.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            sys.stdout.write(self._pending)
            self._pending = ""
        sys.stdout.flush()

    def isatty(self) -> bool:
        return False


def piped() -> bool:
    """Is stdout a pipe or a file with no width asked for (COLUMNS unset)? Then lists are printed as
    tab-separated lines, for grep, cut and awk, not as tables padded to the widest cell."""
    return not sys.stdout.isatty() and not os.environ.get("COLUMNS")


def _console() -> Console:
    """No markup: rule statements, task names and messages are printed as they are (Rich would
    take `shape[i]` for an italic tag and drop it); styles are given as Text objects."""
    if not piped():
        return Console(highlight=False, markup=False)
    return Console(highlight=False, markup=False, width=PIPE_WIDTH, file=_TrimmedStdout())  # type: ignore[arg-type]


console = _console()


def narrow() -> bool:
    """Is the output a terminal too narrow for the wide tables?"""
    return console.width < NARROW


def printable(text: str) -> str:
    """`text` with its control characters shown escaped (`\\x1b`), line breaks kept: a file name or
    a message quoting a file must not recolour the terminal, ring its bell or move the cursor."""
    if text.isprintable():
        return text
    return "\n".join(one_line(line) for line in text.split("\n"))


def name_text(name: object) -> str:
    """A name (a task file, a folder) as one printable line."""
    return one_line(str(name))


def level_text(level: str) -> Text:
    return Text(f"{LEVEL_MARK.get(level, '?')} {level}", style=LEVEL_STYLE.get(level, ""))


def findings_table(findings: Iterable[Finding], title: str = "findings") -> Table:
    t = Table(title=title, title_justify="left", show_lines=False, expand=False)
    t.add_column("level", no_wrap=True)
    t.add_column("rule", no_wrap=True, style="bold")
    t.add_column("whose", no_wrap=True, style="dim")
    t.add_column("message")
    for f in findings:
        t.add_row(level_text(f.level), f.rule, f.authority, printable(f.message))
    return t


def dims(d: Sequence[int] | None) -> str:
    if d is None:
        return "-"
    return "(" + ", ".join(map(str, d)) + ("," if len(d) == 1 else "") + ")"


def kv_table(rows: Iterable[tuple[str, Any]], title: str = "") -> Table:
    t = Table(title=name_text(title) if title else None, title_justify="left", show_header=False, box=None,
              pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    for k, v in rows:
        t.add_row(k, v if isinstance(v, Text) else printable(str(v)))
    return t
