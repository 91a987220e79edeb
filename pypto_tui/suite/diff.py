"""Two runs compared, task by task (matched by file name): what newly fails, what newly passes,
what got slower or faster by more than a threshold, and what only one run has.

A timing difference is counted only past the threshold (a share of the first run's time) and a
floor in seconds, because a shared machine moves a 2-second task by 50% without any change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pypto_tui.suite.history import TaskRow

DEFAULT_THRESHOLD = 0.25
MIN_SECONDS = 2.0


@dataclass
class Change:
    name: str
    before: str
    after: str
    before_s: float | None = None
    after_s: float | None = None
    why: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class RunDiff:
    a: int
    b: int
    threshold: float
    newly_failing: list[Change] = field(default_factory=list)
    newly_passing: list[Change] = field(default_factory=list)
    slower: list[Change] = field(default_factory=list)
    faster: list[Change] = field(default_factory=list)
    only_in_a: list[str] = field(default_factory=list)
    only_in_b: list[str] = field(default_factory=list)
    unchanged: int = 0

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = dict(self.__dict__)
        for key in ("newly_failing", "newly_passing", "slower", "faster"):
            d[key] = [c.to_dict() for c in getattr(self, key)]
        return d


def diff_runs(a_id: int, a: list[TaskRow], b_id: int, b: list[TaskRow], threshold: float = DEFAULT_THRESHOLD,
              min_seconds: float = MIN_SECONDS) -> RunDiff:
    before = {r.name: r for r in a}
    after = {r.name: r for r in b}
    out = RunDiff(a_id, b_id, threshold)
    out.only_in_a = [n for n in before if n not in after]
    out.only_in_b = [n for n in after if n not in before]
    for name, new in after.items():
        old = before.get(name)
        if old is None:
            continue
        change = Change(name, old.verdict, new.verdict, old.wall_s, new.wall_s,
                        (new.errors or [""])[0] if not new.passed else "")
        if old.passed and not new.passed:
            out.newly_failing.append(change)
        elif new.passed and not old.passed:
            out.newly_passing.append(change)
        elif old.wall_s and new.wall_s and abs(new.wall_s - old.wall_s) >= min_seconds:
            ratio = new.wall_s / old.wall_s
            if ratio > 1 + threshold:
                change.why = f"{ratio:.2f}x the time"
                out.slower.append(change)
            elif ratio < 1 / (1 + threshold):
                change.why = f"{ratio:.2f}x the time"
                out.faster.append(change)
            else:
                out.unchanged += 1
        else:
            out.unchanged += 1
    return out
