"""What a worker is doing right now, so no display stays silent through a long compile.

The worker writes its current stage (one word) into `<work dir>/stage` whenever it moves on; the
runner polls that file while it waits and reports changes through its `status` callback. A file,
not a pipe: the worker's fds 1 and 2 belong to pypto's noise while the compiler runs, and a stale
file costs nothing when nobody reads it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STAGE_FILE = "stage"

STARTING = "starting"
IMPORTING = "importing"
CALCULATOR = "calculator"
KERNEL = "kernel"
BASELINE = "baseline"
PASSES = "passes"

TEXT = {
    STARTING: "starting the worker",
    IMPORTING: "loading pypto and torch",
    CALCULATOR: "building pypto's calculator library (one-time: about 2 minutes, then cached)",
    KERNEL: "compiling and running the kernel",
    BASELINE: "running the torch baseline",
    PASSES: "reading the compiler's pass checks",
}

ONE_TIME_NOTE = ("the first verify on this machine builds pypto's calculator library (about 2 minutes); "
                 "it is cached, later runs skip it")


def describe(stage: str) -> str:
    return TEXT.get(stage, stage)


def write_stage(work: Path, stage: str) -> None:
    """Replace the stage file atomically (a reader never sees half a word)."""
    tmp = work / f".{STAGE_FILE}.tmp"
    with contextlib.suppress(OSError):
        tmp.write_text(stage, encoding="utf-8")
        os.replace(tmp, work / STAGE_FILE)


def read_stage(work: Path) -> str | None:
    try:
        return (work / STAGE_FILE).read_text(encoding="utf-8").strip()[:32] or None
    except OSError:
        return None


def eta_s(done: int, total: int, elapsed_s: float) -> float | None:
    """Seconds left at the pace so far (None before the first result or once all are done)."""
    if done <= 0 or total <= done or elapsed_s <= 0:
        return None
    return elapsed_s / done * (total - done)


def duration(seconds: float) -> str:
    """12 s, 3 min 5 s, 1 h 2 min: short enough for a status line."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {s % 3600 // 60} min"
