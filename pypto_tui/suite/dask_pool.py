"""A suite on a Dask distributed cluster (`--scheduler ADDRESS`), the `[cluster]` extra.

Each task is one Dask task that calls `task_exec.run_task` on a worker: the worker runs the same
`verify`/`sim` command in a child process, so the verdict and the record are the local pool's.
Workers are started by the user (`dask worker ADDRESS --nthreads 2 --resources memory=16000` on
machines with the `[sim]` extra); a worker's threads are its task slots, and its `memory`
resource (MB) is shared out by each task's need (capacity.py), so a big task waits for a worker
with room, as on one machine. A need larger than every worker's memory is lowered to the largest,
so that task runs alone there rather than waiting for ever. Without any worker declaring memory,
tasks are placed by threads only (and the suite says so).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pypto_tui.errors import InputError
from pypto_tui.suite import task_exec
from pypto_tui.suite.task_exec import TaskSpec

CONNECT_TIMEOUT_S = 20
OnDone = Callable[[dict[str, Any]], None]
INSTALL_HINT = "pip install 'pypto-tui[cluster]' (the Dask `distributed` package)"


def _client(address: str) -> Any:
    try:
        from distributed import Client
    except ImportError:
        raise InputError(f"--scheduler needs Dask's distributed package: {INSTALL_HINT}") from None
    try:
        return Client(address, timeout=CONNECT_TIMEOUT_S)  # type: ignore[no-untyped-call]
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"--scheduler {address}: cannot reach a Dask scheduler there ({exc}); start one with "
                         f"`dask scheduler` and give its address (tcp://HOST:8786)") from None


class DaskPool:
    """Runs TaskSpecs on the cluster behind `address`."""

    name = "dask"

    def __init__(self, address: str) -> None:
        self.address = address
        self.client = _client(address)
        info = self.client.scheduler_info()
        workers = info.get("workers", {})
        if not workers:
            self.client.close()
            raise InputError(f"--scheduler {address}: the scheduler has no workers; start some with "
                             f"`dask worker {address}`")
        self.slots = sum(int(w.get("nthreads", 1)) for w in workers.values())
        memories = [float(w.get("resources", {}).get("memory", 0)) for w in workers.values()]
        self.max_memory_mb = max(memories) if all(m > 0 for m in memories) else None
        self.note = ("" if self.max_memory_mb is not None else
                     "no worker declares a memory resource (dask worker ... --resources memory=MB): tasks are "
                     "placed by threads only")

    @property
    def workers(self) -> int:
        return self.slots

    def describe(self) -> str:
        mem = f", up to {self.max_memory_mb / 1024:.1f} GB per worker" if self.max_memory_mb else ""
        return f"Dask at {self.address}: {self.slots} task slot(s){mem}" + (f"; {self.note}" if self.note else "")

    def run(self, specs: Sequence[TaskSpec], needs_mb: Sequence[float], on_done: OnDone) -> None:
        from distributed import as_completed

        tag = uuid.uuid4().hex[:8]
        futures = {}
        for i, (spec, need) in enumerate(zip(specs, needs_mb, strict=True)):
            resources = None if self.max_memory_mb is None else {"memory": min(need, self.max_memory_mb)}
            fut = self.client.submit(task_exec.run_task, spec, key=f"pypto-tui-{spec.command}-{tag}-{i}",
                                     pure=False, resources=resources, priority=len(specs) - i, retries=0)
            futures[fut] = spec
        try:
            for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
                spec = futures[fut]
                try:
                    row = fut.result()
                except Exception as exc:  # the worker died, or the task could not be unpickled there
                    row = task_exec.crashed_row(spec, f"{type(exc).__name__}: {exc}")
                on_done(row)
        except BaseException:
            self.client.cancel(list(futures))
            # the commands already running on the workers are stopped too; the workers stay up
            self.client.run(task_exec.stop_all, False)
            raise
        finally:
            self.client.close()
