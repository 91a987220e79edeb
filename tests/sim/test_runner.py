"""runner.py with stand-in workers (shell scripts): timeouts, crashes, cache hits, progress.
No pypto needed; the real worker is exercised in test_real_compiler.py."""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path

import pytest

from pypto_tui.sim import jobs, runner
from pypto_tui.sim.cache import ResultCache, cache_key


def fake_python(tmp_path: Path, body: str) -> str:
    """An executable that ignores `-m pypto_tui.sim.worker JOB RESULT` and runs `body` (sh)."""
    script = tmp_path / f"fakepy_{abs(hash(body))}"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def job(label: str = "j", src: str = "pass") -> jobs.SimJob:
    return jobs.SimJob(kind="cost", kernel_source=src, inputs=(jobs.InputSpec((4,)),), label=label)


def test_timeout_kills_the_worker_and_its_children(tmp_path: Path, alive) -> None:
    pidfile = tmp_path / "child.pid"
    py = fake_python(tmp_path, f"sleep 60 & echo $! > {pidfile}\nwait")
    t0 = time.perf_counter()
    r = runner.run_in_subprocess(job(), timeout_s=1.0, python=py)
    assert r.status == jobs.TIMEOUT and "1 s" in (r.error or "")
    assert time.perf_counter() - t0 < 10
    child = int(pidfile.read_text())
    time.sleep(0.2)
    assert not alive(child)


def test_a_dead_worker_is_reported_as_crashed(tmp_path: Path) -> None:
    py = fake_python(tmp_path, "echo 'Segmentation fault (core dumped)' >&2\nkill -9 $$")
    r = runner.run_in_subprocess(job(), timeout_s=30, python=py)
    assert r.status == jobs.CRASHED and "signal 9" in (r.error or "")
    assert "Segmentation fault" in (r.error or "")


def test_the_result_file_is_read(tmp_path: Path) -> None:
    # argv: -m pypto_tui.sim.worker JOB RESULT -> $4 is RESULT
    py = fake_python(tmp_path, """echo '{"kind": "cost", "status": "ok", "e2e_us": 8.8}' > "$4" """)
    r = runner.run_in_subprocess(job(), timeout_s=30, python=py)
    assert r.ok and r.e2e_us == 8.8


def test_work_dirs_are_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    py = fake_python(tmp_path, "kill -9 $$")
    runner.run_in_subprocess(job(), timeout_s=30, python=py)
    assert list((tmp_path / "tmp").iterdir()) == []


def test_run_many_order_progress_and_cache(tmp_path: Path) -> None:
    store = ResultCache(tmp_path / "cache")
    py = fake_python(
        tmp_path,
        """label=$(sed 's/.*"label": "\\([^"]*\\)".*/\\1/' "$3")
echo "{\\"kind\\": \\"cost\\", \\"status\\": \\"ok\\", \\"label\\": \\"$label\\", \\"e2e_us\\": 1.0}" > "$4" """,
    )
    seen: list[tuple[int, int, str]] = []
    specs = [job(f"j{i}", src=f"X = {i}") for i in range(4)]
    out = runner.run_many(specs, jobs=2, timeout_s=30, cache=store, python=py,
                          progress=lambda d, t, r: seen.append((d, t, r.label)))
    assert [r.label for r in out] == ["j0", "j1", "j2", "j3"]
    assert [d for d, _, _ in seen] == [1, 2, 3, 4] and {t for _, t, _ in seen} == {4}
    assert not any(r.cached for r in out) and all(r.key for r in out)

    # Second time: every answer comes from the cache, no process is started.
    def boom(*a: object, **k: object) -> jobs.SimResult:
        raise AssertionError("spawned a worker on a cache hit")

    old = runner.run_in_subprocess
    runner.run_in_subprocess = boom  # type: ignore[assignment]
    try:
        again = runner.run_many(specs, jobs=2, cache=store, python=py)
    finally:
        runner.run_in_subprocess = old  # type: ignore[assignment]
    assert all(r.cached for r in again) and [r.label for r in again] == ["j0", "j1", "j2", "j3"]


def test_failures_are_not_cached(tmp_path: Path) -> None:
    store = ResultCache(tmp_path / "cache")
    py = fake_python(tmp_path, "kill -9 $$")
    r = runner.run_many([job()], cache=store, python=py)[0]
    assert r.status == jobs.CRASHED
    assert store.get(r.key or "") is None


def test_cache_false_skips_the_cache(tmp_path: Path) -> None:
    py = fake_python(tmp_path, """echo '{"kind": "cost", "status": "ok"}' > "$4" """)
    r = runner.run_many([job()], cache=False, python=py)[0]
    assert r.ok and r.key is None


def test_cost_measure_feeds_the_sweep(tmp_path: Path) -> None:
    from pypto_tui.sim.sweep import guided_sweep_batched

    e2e = {8: None, 16: 3.58, 32: 2.77, 64: 6.45, 128: 10.34}
    store = ResultCache(tmp_path / "cache")
    for loop, value in e2e.items():
        j = job(f"L{loop}", src=f"LOOP = {loop}")
        status = jobs.OK if value is not None else jobs.COMPILE_ERROR
        res = jobs.SimResult(kind="cost", status=status, e2e_us=value, label=j.label)
        store.put(cache_key(j.cache_material(runner._pypto_version())), res.to_json())
    measure = runner.cost_measure(lambda c: job(f"L{c}", src=f"LOOP = {c}"), cache=store, python="/nonexistent")
    r = guided_sweep_batched([8, 16, 32, 64, 128], measure)
    assert r.best == 32 and r.measurements == 3


def verify_job(label: str = "v") -> jobs.SimJob:
    return jobs.SimJob(kind="verify", kernel_source="pass", inputs=(jobs.InputSpec((4,)),), label=label,
                       task_file="task.py", passes=("Pass_04_ExpandFunction", "Pass_28_InferParamIndex"))


BRIEF = ("passName,referPassName,verifyType,loopInfo,ioflag,verifyResult,maxAbsDiff,errorCount\\n"
         "Pass_04_ExpandFunction,tensor_graph,f,loop_idx_0=0,output0,PASS,0,0\\n"
         "Pass_28_InferParamIndex,tensor_graph,f,loop_idx_0=0,output0,{r28},44,2016\\n")


def fake_verify_worker(tmp_path: Path, r28: str, rows: bool = True) -> str:
    """A worker that reports a matching output and leaves a brief CSV in its work dir, the way
    pypto does when the process exits."""
    write_rows = (f"""d=$(sed 's/.*"work_dir": "\\([^"]*\\)".*/\\1/' "$3")/out/output_1/verify_1
mkdir -p "$d" && printf '{BRIEF.format(r28=r28)}' > "$d/verify_result_brief.csv"
""" if rows else "")
    answer = """echo '{"kind": "verify", "status": "ok", "passed": true, "kernel_calls": 1}' > "$4" """
    return fake_python(tmp_path, write_rows + answer)


@pytest.mark.parametrize(("r28", "rows", "status", "first"), [
    ("PASS", True, jobs.OK, None),
    ("FAILED", True, jobs.MISMATCH, "Pass_28_InferParamIndex"),
    ("PASS", False, jobs.UNVERIFIED, None),
])
def test_a_verify_is_decided_by_the_pass_rows_read_after_the_worker_exits(
        tmp_path: Path, r28: str, rows: bool, status: str, first: str | None) -> None:
    r = runner.run_in_subprocess(verify_job(), timeout_s=30, python=fake_verify_worker(tmp_path, r28, rows))
    assert r.status == status and r.first_failing_pass == first
    assert r.passed is (status == jobs.OK)
    assert r.passes_expected == ["tensor_graph", "Pass_04_ExpandFunction", "Pass_28_InferParamIndex"]


def test_status_relays_the_worker_stages(tmp_path: Path) -> None:
    py = fake_python(tmp_path, """w=$(sed 's/.*"work_dir": "\\([^"]*\\)".*/\\1/' "$3")
echo importing > "$w/stage"; sleep 0.6; echo kernel > "$w/stage"; sleep 0.6
echo '{"kind": "cost", "status": "ok", "e2e_us": 1.0}' > "$4" """)
    seen: list[str] = []
    r = runner.run_in_subprocess(job(), timeout_s=30, python=py, status=lambda j, s: seen.append(s))
    assert r.ok and seen == ["importing", "kernel"]


def test_an_interrupted_batch_kills_its_workers_and_starts_no_more(tmp_path: Path, alive) -> None:
    pids = tmp_path / "pids"
    py = fake_python(tmp_path, f"echo $$ >> {pids}\nsleep 60")
    started = []

    def interrupt(j: jobs.SimJob, stage: str) -> None:  # never called: the fake writes no stage
        raise AssertionError

    import threading

    def stop_soon() -> None:
        while len(runner.live_workers()) < 2:
            time.sleep(0.05)
        started.extend(runner.live_workers())
        os.kill(os.getpid(), signal.SIGINT)  # a real signal: it wakes the main thread's wait

    threading.Thread(target=stop_soon, daemon=True).start()
    # Ctrl+C's own handler, whatever an earlier test in this worker process left behind (in CI, one
    # worker's SIGINT no longer raised: the batch ran to its 60 s sleeps and the test failed)
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    request_restore = lambda: signal.signal(signal.SIGINT, saved)  # noqa: E731
    t0 = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        runner.run_many([job(f"j{i}", src=f"X = {i}") for i in range(5)], jobs=2, cache=False, python=py,
                        status=interrupt)
    request_restore()
    assert time.perf_counter() - t0 < 20
    assert len(started) == 2 and runner.live_workers() == []
    time.sleep(0.2)
    assert len(pids.read_text().split()) == 2  # the three queued jobs never started
    assert not any(alive(int(p)) for p in pids.read_text().split())
