"""How many tasks run at once: cores, memory, and each task's recorded need."""

from __future__ import annotations

from pypto_tui.suite.capacity import COMMAND_MB, DEFAULT_TASK_MB, MemoryGate, local_capacity, task_need_mb


def test_a_task_needs_its_last_peak_with_a_margin_or_the_default() -> None:
    assert task_need_mb(None) == DEFAULT_TASK_MB
    assert task_need_mb(1000.0) == 1000.0 * 1.25 + COMMAND_MB


def test_workers_follow_the_cores_unless_memory_is_short() -> None:
    assert local_capacity([1000.0] * 4, cores=2, free_mb=20_000).workers == 2
    short = local_capacity([6000.0] * 4, cores=4, free_mb=10_000)  # 8.5 GB budget: one 6 GB task at a time
    assert short.workers == 1 and "needs ~5.9 GB" in short.why
    assert local_capacity([6000.0], requested=3, cores=2, free_mb=10_000).workers == 3  # as asked


def test_a_task_starts_only_when_its_memory_is_free() -> None:
    gate = MemoryGate(8000.0)
    gate.take(5000.0)
    assert gate.fits(3000.0) and not gate.fits(3001.0)
    gate.take(3000.0)
    gate.give_back(5000.0)
    assert gate.fits(5000.0)


def test_a_task_larger_than_the_budget_waits_then_runs_alone() -> None:
    gate = MemoryGate(8000.0)
    gate.take(1000.0)
    assert not gate.fits(20_000.0)  # waits while anything else runs
    gate.give_back(1000.0)
    assert gate.fits(20_000.0)  # nothing running: it may start
    gate.take(20_000.0)
    assert not gate.fits(1.0)  # and runs alone: it is charged the whole budget
    gate.give_back(20_000.0)
    assert gate.promised == 0.0 and gate.running == 0
