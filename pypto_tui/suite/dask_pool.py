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
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from pypto_tui.errors import InputError
from pypto_tui.suite import task_exec
from pypto_tui.suite.task_exec import TaskSpec

CONNECT_TIMEOUT_S = 20
OnDone = Callable[[dict[str, Any]], None]
T = TypeVar("T")
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

    def resources(self, need_mb: float) -> dict[str, float] | None:
        """What a task asks of a worker: its memory need, at most the largest worker's (so it runs
        alone there rather than waiting for ever); None when the workers declare no memory."""
        if self.max_memory_mb is None or not need_mb:
            return None
        return {"memory": min(need_mb, self.max_memory_mb)}

    def gather(self, futures: Mapping[Any, T], on_result: Callable[[T, Any], None],
               on_error: Callable[[T, Exception], Any], stop: Callable[[], None]) -> None:
        """Each future's result as it completes, with the item it was submitted for; a future whose
        worker died (or could not unpickle it) gives `on_error`'s stand-in. On Ctrl+C or any other
        exit the queued futures are cancelled and `stop` ends what already runs on the workers."""
        from distributed import as_completed

        try:
            for fut in as_completed(list(futures)):  # type: ignore[no-untyped-call]
                item = futures[fut]
                try:
                    result = fut.result()
                except Exception as exc:  # the worker died, or the task could not be unpickled there
                    result = on_error(item, exc)
                on_result(item, result)
        except BaseException:
            self.client.cancel(list(futures))
            stop()
            raise

    def run(self, specs: Sequence[TaskSpec], needs_mb: Sequence[float], on_done: OnDone) -> None:
        tag = uuid.uuid4().hex[:8]
        futures = {}
        for i, (spec, need) in enumerate(zip(specs, needs_mb, strict=True)):
            fut = self.client.submit(task_exec.run_task, spec, key=f"pypto-tui-{spec.command}-{tag}-{i}",
                                     pure=False, resources=self.resources(need), priority=len(specs) - i, retries=0)
            futures[fut] = spec
        try:
            # the commands already running on the workers are stopped too; the workers stay up
            self.gather(futures, lambda _spec, row: on_done(row),
                        lambda spec, exc: task_exec.crashed_row(spec, f"{type(exc).__name__}: {exc}"),
                        lambda: self.client.run(task_exec.stop_all, False))
        finally:
            self.client.close()


# ------------------------------------------------------------------ single verify jobs (--per-kernel)
def ship(job: Any) -> dict[str, str]:
    """The files a verify job reads by path (its task file: the task, or a kernel's own reference
    module), with their text: a worker on another machine has none of them."""
    from pathlib import Path

    path = getattr(job, "task_file", None)
    if not path:
        return {}
    return {path: Path(path).read_text(encoding="utf-8")}


_STOPS: dict[str, list[Any]] = {}
"""On a worker: the stop signals of the jobs of each batch (by its tag) now running there."""


def stop_jobs(tag: str) -> int:
    """On a worker: stop the jobs of batch `tag` running there (the user pressed Ctrl+C); how many."""
    signals = list(_STOPS.get(tag, []))
    for signal in signals:
        signal.cancel("the verification was cancelled")
    return len(signals)


def run_job_on_worker(job: Any, shipped: dict[str, str], timeout_s: float, cache: bool, tag: str = "") -> Any:
    """On a Dask worker: the job's files where the worker has them at the same path with the same
    text, else written to a folder of the worker's own, then the job on the worker's local pool
    (its own process group, timeout and memory cap, as on one machine)."""
    import hashlib
    import tempfile
    from dataclasses import replace
    from pathlib import Path

    from pypto_tui.sim.runner import StopSignal, run_many

    for path, text in shipped.items():
        here = Path(path)
        try:
            same = here.is_file() and here.read_text(encoding="utf-8") == text
        except OSError:
            same = False
        if same:
            continue
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        folder = Path(tempfile.gettempdir()) / "pypto-tui-shipped" / digest
        folder.mkdir(parents=True, exist_ok=True)
        copy = folder / here.name
        copy.write_text(text, encoding="utf-8")
        if job.task_file == path:
            job = replace(job, task_file=str(copy))
    signal = StopSignal()
    _STOPS.setdefault(tag, []).append(signal)
    try:
        return run_many([job], jobs=1, timeout_s=timeout_s, cache=cache, stop=signal)[0]
    finally:
        _STOPS[tag].remove(signal)
        if not _STOPS[tag]:
            del _STOPS[tag]


class DaskJobRunner:
    """Runs a batch of verify jobs on the cluster behind `address`, one Dask task each, results in job
    order (per_kernel.JobRunner): the kernels of one module verified on many machines at once."""

    def __init__(self, address: str, *, timeout_s: float, cache: bool,
                 progress: Callable[[int, int, Any], None] | None = None) -> None:
        self.pool = DaskPool(address)  # refuses an unreachable scheduler or one with no workers
        self.timeout_s = timeout_s
        self.cache = cache
        self.progress = progress

    def describe(self) -> str:
        return self.pool.describe()

    def __call__(self, jobs: Sequence[Any]) -> list[Any]:
        from pypto_tui.sim import jobs as J

        if not jobs:
            return []
        pool = self.pool
        tag = uuid.uuid4().hex[:8]
        futures = {}
        for i, job in enumerate(jobs):
            fut = pool.client.submit(run_job_on_worker, job, ship(job), self.timeout_s, self.cache, tag,
                                     key=f"pypto-tui-kernel-{tag}-{i}", pure=False,
                                     resources=pool.resources(float(job.memory_limit_mb or 0)), retries=0)
            futures[fut] = i
        out: list[Any] = [None] * len(jobs)

        def settle(i: int, result: Any) -> None:
            out[i] = result
            if self.progress is not None:
                self.progress(sum(r is not None for r in out), len(jobs), result)

        def failed(i: int, exc: Exception) -> Any:
            return J.SimResult(kind=jobs[i].kind, status=J.ERROR, label=jobs[i].label,
                               error=f"the Dask worker failed: {type(exc).__name__}: {exc}")

        # the jobs already running on the workers end too
        pool.gather(futures, settle, failed, lambda: pool.client.run(stop_jobs, tag))
        return out

    def close(self) -> None:
        self.pool.client.close()
