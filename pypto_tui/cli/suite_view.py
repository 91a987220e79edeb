"""What a suite shows: on stderr, a bar (done / total, passing, failing, elapsed, time left) and a
line per finished task; on stdout at the end, the summary table and the totals.

When stderr is not a terminal (a CI log) there is no bar, only the lines, so the log still says
how far the suite got.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Self

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from pypto_tui.errors import one_line

_err = Console(stderr=True, highlight=False)
STYLE = {"pass": "green", "fail": "bold red", "unsupported": "yellow", "error": "bold red", "timeout": "bold red"}


class SuiteProgress:
    """The suite's `notify` callback, as a rich bar on stderr (or plain lines)."""

    def __init__(self, title: str) -> None:
        self.live = _err.is_terminal
        self.title = one_line(title)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("[green]{task.fields[passed]} passing[/] [red]{task.fields[failed]} "
                                            "failing[/]"), TimeElapsedColumn(), TextColumn("left"),
                                 TimeRemainingColumn(), console=_err, transient=True)
        from rich.markup import escape

        self.task = self.progress.add_task(escape(self.title), total=None, passed=0, failed=0)
        self.started = time.monotonic()
        self.done_before = 0

    def __enter__(self) -> Self:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def _line(self, text: str) -> None:
        if self.live:
            self.progress.console.print(text, markup=False)
        else:
            sys.stderr.write(text + "\n")
            sys.stderr.flush()

    def update(self, event: Any) -> None:
        if event.row is None:
            self.started, self.done_before = time.monotonic(), event.done
            resumed = f", {event.done} already recorded" if event.done else ""
            self._line(f"pypto-tui: {self.title}: {event.total} task(s){resumed}; {one_line(str(event.note))}")
            self.progress.reset(self.task, total=event.total, completed=event.done, passed=event.passed,
                                failed=event.failed)
            return
        r = event.row
        why = f": {one_line(str(r.errors[0]))}" if r.errors else ""
        self._line(f"pypto-tui: [{event.done}/{event.total}{self._left(event)}] {r.verdict.upper()} {one_line(r.name)} "
                   f"({r.wall_s or 0:.1f} s){why}"[:400])
        self.progress.update(self.task, completed=event.done, passed=event.passed, failed=event.failed)


    def _left(self, event: Any) -> str:
        """`, ~N min left`: the pace so far (tasks finished in this process) over the tasks left."""
        ran = event.done - self.done_before
        left = event.total - event.done
        if ran <= 0 or left <= 0:
            return ""
        secs = (time.monotonic() - self.started) / ran * left
        return f", ~{secs / 60:.0f} min left" if secs >= 90 else f", ~{secs:.0f} s left"


def show_summary(result: Any) -> None:
    from pypto_tui.cli.render import console

    t = Table(title=one_line(f"run {result.run.id}: {result.run.command} {result.run.folder}"), title_justify="left")
    for col in ("task", "family", "verdict", "time s", "peak MB", "why"):
        t.add_column(col, no_wrap=col != "why")
    for r in result.rows:
        t.add_row(one_line(r.name), one_line(r.family or "-"),
                  Text(one_line(r.verdict), style=STYLE.get(r.verdict, "")),
                  f"{r.wall_s:.1f}" if r.wall_s is not None else "-",
                  f"{r.peak_rss_mb:.0f}" if r.peak_rss_mb is not None else "-",
                  one_line(str((r.errors or [""])[0]))[:200])
    console.print(t)
    tot = result.totals
    other = ", ".join(f"{n} {v}" for v, n in sorted(tot["by_verdict"].items()) if v != "pass")
    resumed = f" ({tot['resumed']} recorded before this resume)" if tot["resumed"] else ""
    console.print(f"{tot['passed']} of {tot['tasks']} passed{': ' + other if other else ''}{resumed}; "
                  f"{result.wall_s:.1f} s on the {result.pool} pool. History: run {result.run.id} in "
                  f"{one_line(str(result.db_path))} (pypto-tui runs show {result.run.id})", markup=False)
