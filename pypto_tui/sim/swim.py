"""Read what the compiler wrote to disk: the cost model's swim file, and the plog's errors.

The cost figure is read from `_simulate.swim.json`, not from stdout: pypto's own summary line
("AICore End-to-End Time") is printed by a helper subprocess to the raw fds, and computing it
ourselves needs no matplotlib. The definition is the package's (draw_swim_lane.py,
print_aicore_summary): E2E = (max execEnd - min execStart) over every task on an AIC or AIV
core, in cycles, divided by the cycles per microsecond (1800 for the modelled A2A3 chip).
Utilisation = sum of task durations / (AIC+AIV lanes x span).

A failed compile raises only "Errcode: FFFFFF! Run pass failed." in Python; the reason (for
example "Alloc tensor [9] size [262144] exceeds MEM_UB size [196608]!") is only in the plog
files under ASCEND_PROCESS_LOG_PATH, as `[ERROR]` lines. The first specific one is the cause;
the ones after it are the failure unwinding ("RetireOp failed!", "Run pass <X> failed.").

Pure functions over files: no pypto import.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CYCLES_PER_US = 1800.0
SWIM_FILE = "_simulate.swim.json"
COST_DIR = "CostModelSimulationOutput"
CORE_TYPES = ("AIC", "AIV")


@dataclass(frozen=True, slots=True)
class SwimSummary:
    """One kernel launch as the cost model saw it."""

    e2e_us: float
    cycles: int
    tasks: int
    utilisation: float
    lanes: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "e2e_us": self.e2e_us,
            "cycles": self.cycles,
            "tasks": self.tasks,
            "utilisation": self.utilisation,
            "lanes": self.lanes,
        }


def summarise_swim(
    cores: Sequence[dict[str, Any]], cycles_per_us: float = DEFAULT_CYCLES_PER_US
) -> SwimSummary:
    """Summarise the parsed swim JSON (a list of cores, each with `coreType` and `tasks`)."""
    if cycles_per_us <= 0:
        raise ValueError("cycles_per_us must be positive")
    start: int | None = None
    end: int | None = None
    busy = tasks = lanes = 0
    for core in cores:
        if core.get("coreType") not in CORE_TYPES:
            continue
        lanes += 1
        for t in core.get("tasks", ()):
            s, e = int(t["execStart"]), int(t["execEnd"])
            start = s if start is None else min(start, s)
            end = e if end is None else max(end, e)
            busy += e - s
            tasks += 1
    if start is None or end is None:
        return SwimSummary(0.0, 0, 0, 0.0, lanes)
    span = end - start
    util = busy / (lanes * span) if span > 0 and lanes else 0.0
    return SwimSummary(span / cycles_per_us, span, tasks, util, lanes)


def read_swim(path: str | Path, cycles_per_us: float = DEFAULT_CYCLES_PER_US) -> SwimSummary:
    with Path(path).open(encoding="utf-8") as fh:
        data = json.load(fh)
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a JSON list of cores")
    return summarise_swim(data, cycles_per_us)


def find_swim_files(output_root: str | Path) -> list[Path]:
    """Every `output_*/CostModelSimulationOutput/_simulate.swim.json` under TILE_FWK_OUTPUT_DIR,
    in launch order (the folder names start with the date, time and microseconds)."""
    root = Path(output_root)
    return sorted(root.glob(f"output_*/{COST_DIR}/{SWIM_FILE}"), key=lambda p: p.parent.parent.name)


# --- plog ------------------------------------------------------------------------------------

# [ERROR] PYPTO(4339):2026-11-30 01:21:29.531 [schedule_base.h:358][PASS]:[OoOScheduleBase.Operation]:msg
_ERROR_LINE = re.compile(r"^\[ERROR\]\s+\S+?:\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?\s*(?P<rest>.*)$")
_LEADING_TAGS = re.compile(r"^(?:\[[^\]]*\]:?)+\s*")
_UNWINDING = re.compile(
    r"(?:^Run pass\b|^Global \w+ failed$|failed[.!]?$|\bcannot find\b|^op: |\[Backtrace\])", re.IGNORECASE
)
# pypto's cost model runs its own plotting scripts after a simulation (draw_pipe_swim_lane.py,
# print_swim_lane.py: matplotlib, pandas, plotly) and logs an ERROR when they fail, which they do
# wherever those packages are absent, on every kernel, before the error that stopped the compile.
_SIDE_SCRIPT = re.compile(r"^cmd error: python3? \S*/scripts/\w+\.py\b")


def plog_error_messages(lines: Iterable[str]) -> list[str]:
    """The message part of every `[ERROR]` line, tags and timestamps stripped, in order."""
    out: list[str] = []
    for raw in lines:
        m = _ERROR_LINE.match(raw.strip())
        if not m:
            continue
        msg = _LEADING_TAGS.sub("", m.group("rest")).strip()
        if msg:
            out.append(msg)
    return out


def pick_reason(messages: Sequence[str]) -> str | None:
    """The first message that states a cause, else the first message, else None."""
    stated = [m for m in messages if not _SIDE_SCRIPT.search(m)] or list(messages)
    for msg in stated:
        if not _UNWINDING.search(msg):
            return msg
    return stated[0] if stated else None


def plog_files(log_root: str | Path) -> list[Path]:
    """Plog files under ASCEND_PROCESS_LOG_PATH (they land in debug/plog/), oldest first."""
    root = Path(log_root)
    return sorted((p for p in root.rglob("*.log") if p.is_file()), key=lambda p: (p.stat().st_mtime, p.name))


def read_plog_errors(log_root: str | Path) -> list[str]:
    messages: list[str] = []
    for f in plog_files(log_root):
        try:
            with f.open(encoding="utf-8", errors="replace") as fh:
                messages.extend(plog_error_messages(fh))
        except OSError:
            continue
    return messages


def compile_error_reason(log_root: str | Path) -> str | None:
    """The real reason a compile failed, from the plog, or None if it logged no error."""
    return pick_reason(read_plog_errors(log_root))


# --- exception text --------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_BACKTRACE = re.compile(r"\.so[.\d]*\(|\[0x[0-9a-f]+\]|^\s*\^+\s*$|^\s*\d+ \|")
_WHERE = re.compile(r",\s*func \w+, file [\w.]+, line \d+\s*$")


def summarise_exception_text(text: str, limit: int = 300) -> str:
    """One line from pypto's multi-line exception text: ANSI codes, C++ backtraces, source
    excerpts and the trailing "func X, file Y, line Z" dropped; the first two lines joined
    (pypto puts the error code on one line and the message on the next)."""
    lines = []
    for raw in _ANSI.sub("", text).splitlines():
        line = raw.strip()
        if not line or _BACKTRACE.search(line):
            continue
        lines.append(_WHERE.sub("", line))
        if len(lines) == 2:
            break
    if len(lines) == 2 and not lines[0].rstrip().endswith("!"):
        lines = lines[:1]
    one = " ".join(lines) or text.strip()
    return one if len(one) <= limit else one[: limit - 1] + "…"
