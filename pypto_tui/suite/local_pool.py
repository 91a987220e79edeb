"""A suite on this machine: task commands run in child processes, as many at once as the workers
and the memory allow (capacity.py), started in the given order.

The calling thread starts every task and receives every record (`on_done`), so the one thread
that writes the run history is the caller's. A task waits in order: one that does not fit yet
holds back those behind it, so a large task is never starved by a stream of small ones.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from pypto_tui.suite import task_exec
from pypto_tui.suite.capacity import Capacity, MemoryGate
from pypto_tui.suite.task_exec import TaskSpec
from pypto_tui.suite.warm_slots import shared_zygotes

POLL_S = 0.5
OnDone = Callable[[dict[str, Any]], None]


class LocalPool:
    """Runs TaskSpecs with `capacity.workers` at once, each admitted by the memory gate."""

    name = "local"

    def __init__(self, capacity: Capacity) -> None:
        self.capacity = capacity

    @property
    def workers(self) -> int:
        return self.capacity.workers

    def describe(self) -> str:
        return f"local pool: {self.capacity.describe()}"

    def run(self, specs: Sequence[TaskSpec], needs_mb: Sequence[float], on_done: OnDone) -> None:
        slots = min(self.capacity.workers, len(specs))
        with shared_zygotes(slots, task_exec.child_env()) as envs:
            self._run(specs, needs_mb, on_done, envs)

    def _run(self, specs: Sequence[TaskSpec], needs_mb: Sequence[float], on_done: OnDone,
             envs: list[dict[str, str]]) -> None:
        gate = MemoryGate(self.capacity.budget_mb)
        queue = list(zip(specs, needs_mb, strict=True))
        running: dict[Future[dict[str, Any]], tuple[TaskSpec, float, dict[str, str]]] = {}
        pool = ThreadPoolExecutor(max_workers=self.capacity.workers, thread_name_prefix="suite-task")
        try:
            while queue or running:
                while queue and len(running) < self.capacity.workers and gate.fits(queue[0][1]):
                    spec, need = queue.pop(0)
                    gate.take(need)
                    slot = envs.pop() if envs else {}
                    running[pool.submit(task_exec.run_task, spec, slot)] = (spec, need, slot)
                done, _ = wait(list(running), timeout=POLL_S, return_when=FIRST_COMPLETED)
                for fut in done:
                    spec, need, slot = running.pop(fut)
                    gate.give_back(need)
                    if slot:
                        envs.append(slot)
                    on_done(_result(fut, spec))
        except BaseException:
            # Interrupted (Ctrl+C, SIGTERM turned into SystemExit, an error writing a record): every
            # task command of ours is stopped before the exception goes on; none may start after.
            task_exec.stop_all()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


def _result(fut: Future[dict[str, Any]], spec: TaskSpec) -> dict[str, Any]:
    try:
        return fut.result()
    except Exception as exc:  # the runner itself failed (a full disk, ...): the task is an error
        return task_exec.crashed_row(spec, f"{type(exc).__name__}: {exc}")
