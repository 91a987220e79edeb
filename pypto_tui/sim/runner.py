"""Run many jobs, each in its own worker subprocess, a few at a time, each with a timeout.

The parent never imports pypto or torch. For each job it:
1. looks the job up in the result cache (a hit is reported at once and spawns nothing);
2. creates the private work dir, writes JOB.json, starts
   `sys.executable -m pypto_tui.sim.worker JOB.json RESULT.json` in a new session (so a timeout
   can kill the worker *and* the helper scripts pypto starts, as one process group);
3. waits, relaying the worker's stage (stages.py) to a `status` callback;
4. reads RESULT.json, or, if the worker was killed or died, makes a `timeout`/`crashed`
   result with the tail of what it printed; for a verify job it then reads pass-verify's rows,
   which pypto completes only when the worker exits (passes.py);
5. deletes the work dir, and stores cacheable results.

Progress is reported from the calling thread as `progress(done, total, result)`, in completion
order; the returned list is in job order. Every live worker is known (`live_workers`), so an
interrupted batch kills its own and `stop_all` kills them all: a Ctrl+C or SIGTERM to the CLI
leaves no worker running under init.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from pypto_tui.procgroup import PARENT_ENV, kill_tree
from pypto_tui.sim import jobs as J
from pypto_tui.sim import passes, stages, zygote_client
from pypto_tui.sim.cache import ResultCache, cache_key
from pypto_tui.sim.worker import NOISE_FILE

Progress = Callable[[int, int, J.SimResult], None]
Worker = subprocess.Popen[bytes] | zygote_client.WarmChild
Status = Callable[[J.SimJob, str], None]

DEFAULT_TIMEOUT_S = 300.0
MIN_COMPARE_S = 60.0  # the comparison's time when the kernel used (nearly) all of the job's
POLL_S = 0.25
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


def _pypto_version() -> str | None:
    from pypto_tui.sim.shim import pypto_version

    return pypto_version()


def _tail(path: Path, limit: int = 600) -> str:
    try:
        data = path.read_bytes()[-limit:]
    except OSError:
        return ""
    return data.decode("utf-8", errors="replace").strip()


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env[PARENT_ENV] = str(os.getpid())  # the worker's check that we still live (procgroup)
    return env


class _Workers:
    """The worker processes alive right now, so an interrupted caller can stop every one.

    A batch (one run_many call) stops its own workers when it is interrupted; `stop_all` stops
    every worker of this process (the CLI's signal handlers, the app on exit). Starting a worker
    and checking for a stop happen under one lock, so none can slip in after the stop."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.live: dict[int, tuple[Worker, object]] = {}
        self.stopped: set[object] = set()

    def start(self, batch: object, argv: list[str], err: Any, err_path: Path, warm: bool) -> Worker | None:
        """Start a worker: forked from the warm parent when `warm` and it can (zygote_client),
        else a fresh interpreter."""
        with self.lock:
            if batch in self.stopped:
                return None
            env = _child_env()
            proc: Worker | None = zygote_client.spawn(argv, err_path, env) if warm else None
            if proc is None:
                proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=err, stderr=err, env=env,
                                        start_new_session=True)
            self.live[proc.pid] = (proc, batch)
            return proc

    def forget(self, proc: Worker) -> None:
        with self.lock:
            self.live.pop(proc.pid, None)

    def stop(self, batch: object | None = None) -> int:
        """Kill the workers of `batch` (every worker when None) and refuse new ones for it."""
        with self.lock:
            if batch is not None:
                self.stopped.add(batch)
            victims = [p for p, b in self.live.values() if batch is None or b is batch]
        for proc in victims:
            _kill_group(proc)
        return len(victims)

    def end(self, batch: object) -> None:
        with self.lock:
            self.stopped.discard(batch)


_WORKERS = _Workers()


def stop_all() -> int:
    """Kill every worker process (and its helpers) this process started; returns how many."""
    return _WORKERS.stop(None)


def live_workers() -> list[int]:
    """The pids of the workers running now (for tests and status lines)."""
    with _WORKERS.lock:
        return list(_WORKERS.live)


def run_in_subprocess(
    job: J.SimJob, *, timeout_s: float = DEFAULT_TIMEOUT_S, python: str | None = None,
    status: Status | None = None, batch: object | None = None,
) -> J.SimResult:
    """One job, one fresh worker process, no cache. `status(job, stage)` is called (from this
    thread) each time the worker moves to a new stage; a verify job's pass checks are read here,
    once the worker has exited and pypto has completed its files."""
    work = Path(tempfile.mkdtemp(prefix="pypto-tui-sim-"))
    ctl = Path(tempfile.mkdtemp(prefix="pypto-tui-ctl-"))
    job_path, result_path = ctl / "job.json", ctl / "result.json"
    job_json = job.to_json()
    job_json["work_dir"] = str(work)
    job_path.write_text(json.dumps(job_json), encoding="utf-8")
    t0 = time.perf_counter()
    stderr_path = ctl / "stderr.log"
    try:
        def step(path: Path, mode: str, seconds: float, stopped: str, timed_out: str) -> int | J.SimResult:
            """One worker process on `path`'s step: its exit code, or the result that ends the job."""
            with stderr_path.open(mode) as err:
                argv = [python or sys.executable, "-m", "pypto_tui.sim.worker", str(path), str(result_path)]
                proc = _WORKERS.start(batch if batch is not None else job, argv, err, stderr_path,
                                      warm=python is None)
                if proc is None:
                    return J.SimResult(kind=job.kind, status=J.CRASHED, label=job.label, error=stopped)
                try:
                    return _wait(proc, work, seconds, job, status)
                except BaseException as exc:  # the timeout, or the caller interrupted us
                    _kill_group(proc)
                    if not isinstance(exc, subprocess.TimeoutExpired):
                        raise
                    return J.SimResult(kind=job.kind, status=J.TIMEOUT, label=job.label, error=timed_out,
                                       wall_s=round(time.perf_counter() - t0, 3))
                finally:
                    _WORKERS.forget(proc)

        ran = step(job_path, "wb", timeout_s, "stopped before it started",
                   f"no answer within {timeout_s:g} s; the worker was stopped")
        if isinstance(ran, J.SimResult):
            return ran
        rc = ran
        if result_path.exists() and _handed_off(result_path):
            # The kernel ran and left its outputs: the baseline and the comparison run in a process
            # of their own, which never imports the kernel module (worker.run_compare).
            compare_path = ctl / "compare.json"
            compare_path.write_text(json.dumps({**job_json, "step": J.COMPARE_STEP}), encoding="utf-8")
            ran = step(compare_path, "ab", max(timeout_s - (time.perf_counter() - t0), MIN_COMPARE_S),
                       "stopped before the comparison started",
                       f"no answer within {timeout_s:g} s (the comparison with the baseline was stopped)")
            if isinstance(ran, J.SimResult):
                return ran
            rc = ran
            if _handed_off(result_path):  # the compare step died before it wrote its answer
                result_path.unlink()
        if result_path.exists():
            try:
                result = J.SimResult.from_json(json.loads(result_path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                detail = f"unreadable result file: {exc}"
            else:
                if job.kind == "verify" and result.status in (J.OK, J.MISMATCH):
                    if status:
                        status(job, stages.PASSES)
                    _check_passes(job, work, result)
                return result
        else:
            why = f"signal {-rc}" if rc < 0 else f"exit status {rc}"
            if rc == -signal.SIGKILL:
                why += " (killed: out of memory?)"
            noise = _tail(work / NOISE_FILE) or _tail(stderr_path)
            detail = f"the worker died ({why})" + (f": {noise.splitlines()[-1]}" if noise else "")
            if job.kind == "verify" and job.memory_limit_mb:
                detail += (
                    f"; if the kernel is large, the worker's address-space cap ({job.memory_limit_mb} MB) "
                    "may be too low: raise it with --memory-mb or verify a smaller shape"
                )
        return J.SimResult(
            kind=job.kind, status=J.CRASHED, label=job.label, error=detail,
            wall_s=round(time.perf_counter() - t0, 3),
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(ctl, ignore_errors=True)


def _handed_off(result_path: Path) -> bool:
    """Whether the worker's answer is the kernel worker's hand-off (outputs saved, not compared)."""
    try:
        handed: bool = json.loads(result_path.read_text(encoding="utf-8")).get("status") == J.RAN
        return handed
    except (OSError, ValueError, AttributeError):
        return False


def _wait(proc: Worker, work: Path, timeout_s: float, job: J.SimJob,
          status: Status | None) -> int:
    """Wait for the worker, relaying its stage changes; TimeoutExpired after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    seen: str | None = None
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise subprocess.TimeoutExpired(proc.args, timeout_s)
        try:
            return proc.wait(timeout=min(POLL_S, left))
        except subprocess.TimeoutExpired:
            pass
        if status is not None:
            stage = stages.read_stage(work)
            if stage and stage != seen:
                seen = stage
                status(job, stage)


def _check_passes(job: J.SimJob, work: Path, result: J.SimResult) -> None:
    """Fold pass-verify's rows (complete now that the worker has exited) into the result."""
    rows, files = passes.read_rows(work / "out")
    reference_ok = None if result.status not in (J.OK, J.MISMATCH) else result.status == J.OK
    check = passes.check_passes(rows, files, result.kernel_calls or 0, job.passes or (),
                                job.reference or "tensor_graph", reference_ok, passes.unrunnable_passes(work / "log"))
    passes.fold_into(result, check)


def _kill_group(proc: Worker) -> None:
    """Stop a worker that is still running, with every process below it: pypto's helper scripts
    share the new session it was started in (group id: the worker's pid, never ours), and what the
    task or kernel code started, even in a session of its own, is in the worker's process tree (the
    worker is their subreaper: procgroup.guard_task_runner)."""
    if proc.poll() is None:
        kill_tree(proc.pid)
        try:
            if os.getpgid(proc.pid) == proc.pid:
                os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
    proc.wait()


class StopSignal:
    """Asks a batch to stop: the user cancelled, or the time budget ran out. Thread-safe; the
    runner polls `reason()` while it waits and kills the batch's workers once it says why."""

    def __init__(self, budget_s: float | None = None) -> None:
        self._event = threading.Event()
        self._why = ""
        self.budget_s = budget_s
        self._deadline = time.monotonic() + budget_s if budget_s else None

    def cancel(self, why: str = "cancelled") -> None:
        self._why = self._why or why
        self._event.set()

    def reason(self) -> str | None:
        if self._event.is_set():
            return self._why
        if self._deadline is not None and time.monotonic() >= self._deadline:
            from pypto_tui.sim.stages import duration

            self.cancel(f"the time budget of {duration(self.budget_s or 0)} ran out")
            return self._why
        return None


def _resolve_cache(cache: ResultCache | bool | None) -> ResultCache | None:
    if cache is True or cache is None:
        return ResultCache.default()
    if cache is False:
        return None
    return cache


def run_many(
    sim_jobs: Sequence[J.SimJob],
    *,
    jobs: int = 2,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Progress | None = None,
    cache: ResultCache | bool | None = True,
    python: str | None = None,
    status: Status | None = None,
    stop: StopSignal | None = None,
) -> list[J.SimResult]:
    """Run `sim_jobs`, at most `jobs` worker processes at once. Results come back in job order;
    `progress(done, total, result)` is called in the calling thread as each one finishes
    (cache hits first); `status(job, stage)` from the threads that wait on the workers, as each
    worker moves on (see stages.py). `cache=False` disables the cache; a ResultCache uses that
    folder. If this call is interrupted, its workers are killed before the exception propagates.
    When `stop` says why, the batch's workers are killed and every job that had not finished
    comes back `cancelled` with that reason (nothing is cached for it)."""
    store = _resolve_cache(cache)
    total = len(sim_jobs)
    results: list[J.SimResult | None] = [None] * total
    keys: list[str | None] = [None] * total
    done = 0
    version = _pypto_version() if store is not None else None

    pending: list[int] = []
    for i, job in enumerate(sim_jobs):
        if store is not None:
            key = cache_key(job.cache_material(version))
            keys[i] = key
            hit = store.get(key)
            if hit is not None:
                res = J.SimResult.from_json(hit)
                res.cached, res.key, res.label = True, key, job.label
                results[i] = res
                done += 1
                if progress:
                    progress(done, total, res)
                continue
        pending.append(i)

    if not pending:
        return [r for r in results if r is not None]
    batch = object()
    pool = ThreadPoolExecutor(max_workers=max(1, int(jobs)))
    try:
        futures: dict[Future[J.SimResult], int] = {
            pool.submit(run_in_subprocess, sim_jobs[i], timeout_s=timeout_s, python=python, status=status,
                        batch=batch): i
            for i in pending
        }
        remaining = set(futures)
        why: str | None = None
        while remaining:
            finished, remaining = wait(remaining, timeout=POLL_S if stop else None, return_when=FIRST_COMPLETED)
            if stop is not None and why is None:
                why = stop.reason()
                if why is not None:
                    _WORKERS.stop(batch)
            for fut in finished:
                i = futures[fut]
                res = fut.result()
                if why is not None and res.status in (J.CRASHED, J.TIMEOUT):
                    res = J.SimResult(kind=res.kind, status=J.CANCELLED, label=res.label, error=why,
                                      wall_s=res.wall_s)
                res.key = keys[i]
                if store is not None and res.key and res.cacheable:
                    store.put(res.key, res.to_json())
                results[i] = res
                done += 1
                if progress:
                    progress(done, total, res)
    except BaseException:
        # Interrupted (Ctrl+C, a signal turned into an exception, an error in a callback): no
        # worker of this batch may outlive us, and none may start after this point.
        pool.shutdown(wait=False, cancel_futures=True)
        _WORKERS.stop(batch)
        raise
    finally:
        pool.shutdown(wait=True)
        _WORKERS.end(batch)
    return [r for r in results if r is not None]


def run_one(job: J.SimJob, **kwargs: object) -> J.SimResult:
    """`run_many([job], **kwargs)[0]`."""
    return run_many([job], **kwargs)[0]  # type: ignore[arg-type]


def cost_measure(
    make_job: Callable[[object], J.SimJob], **run_kwargs: object
) -> Callable[[Sequence[object]], list[float | None]]:
    """A `sweep.MeasureBatch` that compiles each candidate's job (both sides of a sweep round in
    parallel) and returns its e2e µs, or None when it did not compile or run."""

    def measure(batch: Sequence[object]) -> list[float | None]:
        results = run_many([make_job(c) for c in batch], **run_kwargs)  # type: ignore[arg-type]
        return [r.e2e_us if r.ok else None for r in results]

    return measure
