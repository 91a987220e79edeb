"""No long silences, and no orphans: what `sim` and `verify` show on stderr while the compiler
works, and how they end their workers when they are stopped.

- verify: a spinner with the worker's stage and the elapsed time (stdout stays data, so this
  shows with --json too, whenever stderr is a terminal). The calculator library's one-time build
  is announced once, as a plain line, even when stderr is not a terminal: it takes two minutes.
- sim sweeps: a bar with candidates done / total, the elapsed time and an estimate of the time
  left, and the stage of the compile in flight.
- Ctrl+C or SIGTERM: the handlers below turn the signal into SystemExit(128 + signal); the runner
  kills the workers of the interrupted batch as the exception passes, and `stop_all` catches any
  straggler, so no worker is left running under init.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any, Self

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from pypto_tui.sim import stages

_err = Console(stderr=True, highlight=False)


@contextlib.contextmanager
def workers_end_with_us() -> Iterator[None]:
    """While the body runs, Ctrl+C, SIGTERM and SIGHUP end this process *and* its compiler workers."""
    from pypto_tui.sim.runner import stop_all

    def stop(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        sys.stderr.write(f"pypto-tui: {name}: stopping the compiler workers\n")
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        stop_all()
        for s, handler in saved.items():
            signal.signal(s, handler)


class _Display:
    """A rich Progress on stderr, live only when stderr is a terminal (and `enabled`)."""

    def __init__(self, progress: Progress, description: str, enabled: bool = True) -> None:
        self.live = enabled and _err.is_terminal
        self.progress = progress
        self.task = self.progress.add_task(description, total=None)

    def __enter__(self) -> Self:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()


class StageSpinner(_Display):
    """One long job: a spinner with its current stage and the elapsed time."""

    def __init__(self, title: str) -> None:
        from rich.markup import escape

        from pypto_tui.errors import one_line

        title = escape(one_line(title))  # a task file's name: shown, never run as escape codes or markup
        super().__init__(Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(),
                                  console=_err, transient=True), f"{title}: starting")
        self.title = title
        self._announced = False

    def stage(self, _job: Any, stage: str) -> None:
        """The runner's `status` callback (called from its waiting thread; rich is thread-safe)."""
        if stage == stages.CALCULATOR and not self._announced:
            self._announced = True
            if self.live:
                self.progress.console.print(f"pypto-tui: {stages.ONE_TIME_NOTE}")
            else:
                sys.stderr.write(f"pypto-tui: {stages.ONE_TIME_NOTE}\n")
        self.progress.update(self.task, description=f"{self.title}: {stages.describe(stage)}")


class SweepBar(_Display):
    """Many compiles: done / total, elapsed, time left, and the stage of the one in flight."""

    def __init__(self, title: str, enabled: bool) -> None:
        super().__init__(Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                                  console=_err, transient=True), title, enabled)
        self.title = title
        self.last = ""

    def announce(self, line: str) -> None:
        """One plain line on stderr above the bar (the sweep's forecast before it starts)."""
        if self.live:
            self.progress.console.print(f"pypto-tui: {line}")
        else:
            sys.stderr.write(f"pypto-tui: {line}\n")

    def tick(self, done: int, total: int, result: Any) -> None:
        """The runner's `progress` callback."""
        self.last = getattr(result, "label", "") or ""
        self.progress.update(self.task, completed=done, total=total, description=f"{self.title} (last: {self.last})")

    def stage(self, job: Any, stage: str) -> None:
        self.progress.update(self.task, description=f"{self.title}: {getattr(job, 'label', '')} "
                                                    f"{stages.describe(stage)}")
