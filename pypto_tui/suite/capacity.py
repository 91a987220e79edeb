"""How many tasks run at once: the cores, the memory, and what each task needed last time.

A verify peaks anywhere from 0.3 to 5 GB (KernelBench level 1), so a core count alone either
wastes the machine or runs it out of memory. Each task's need is its peak from the run history
(plus the command's own process), or a default for a task never run; a task starts only when its
need fits in the memory not yet promised to running tasks. A task that needs more than the whole
budget waits until nothing else runs, then runs alone.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass

from pypto_tui.sim.timings import MEMORY_HEADROOM
from pypto_tui.sim.timings import available_mb as _meminfo

DEFAULT_TASK_MB = 2048.0
"""A task with no history: the middle of what KernelBench level-1 verifies peaked at."""
COMMAND_MB = 400.0
"""The `verify`/`sim` command's own process beside its compiler worker (measured ~350 MB)."""
HISTORY_MARGIN = 1.25
"""A recorded peak grows by this much before it is trusted again (inputs are random, passes vary)."""


def available_mb() -> float | None:
    """MemAvailable from /proc/meminfo (None where there is no such file)."""
    return _meminfo()


def task_need_mb(peak_mb: float | None) -> float:
    """The memory to set aside for a task whose last recorded peak was `peak_mb`."""
    if peak_mb is None or peak_mb <= 0:
        return DEFAULT_TASK_MB
    return peak_mb * HISTORY_MARGIN + COMMAND_MB


@dataclass(frozen=True)
class Capacity:
    workers: int
    budget_mb: float | None
    why: str

    def describe(self) -> str:
        mem = f", {self.budget_mb / 1024:.1f} GB for tasks" if self.budget_mb is not None else ""
        return f"{self.workers} worker(s){mem}" + (f" ({self.why})" if self.why else "")


def local_capacity(needs: list[float], requested: int | None = None, cores: int | None = None,
                   free_mb: float | None = None) -> Capacity:
    """Workers for this machine: `requested` if given, else the cores, but no more than the typical
    task's need fits in memory (each start is still checked against the budget, see MemoryGate)."""
    cores = cores or os.cpu_count() or 1
    free = available_mb() if free_mb is None else free_mb
    budget = free * MEMORY_HEADROOM if free is not None else None
    if requested is not None:
        return Capacity(max(1, requested), budget, "as asked")
    typical = statistics.median(needs) if needs else DEFAULT_TASK_MB
    fit = cores if budget is None else max(1, int(budget // max(1.0, typical)))
    workers = max(1, min(cores, fit))
    if fit < cores:
        return Capacity(workers, budget, f"a typical task needs ~{typical / 1024:.1f} GB")
    return Capacity(workers, budget, f"{cores} core(s)")


class MemoryGate:
    """Memory promised to running tasks, against a budget (None: no limit known)."""

    def __init__(self, budget_mb: float | None) -> None:
        self.budget_mb = budget_mb
        self.promised = 0.0
        self.running = 0

    def share(self, need_mb: float) -> float:
        """What a task is charged: its need, at most the whole budget (it then runs alone)."""
        return need_mb if self.budget_mb is None else min(need_mb, self.budget_mb)

    def fits(self, need_mb: float) -> bool:
        if self.running == 0 or self.budget_mb is None:
            return True
        return self.promised + self.share(need_mb) <= self.budget_mb

    def take(self, need_mb: float) -> None:
        self.promised += self.share(need_mb)
        self.running += 1

    def give_back(self, need_mb: float) -> None:
        self.promised = max(0.0, self.promised - self.share(need_mb))
        self.running -= 1
