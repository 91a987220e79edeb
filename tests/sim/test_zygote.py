"""The warm parent (sim/zygote.py): workers forked from it answer exactly as fresh interpreters
do, a timeout still kills one without spoiling the next, and nothing outlives the process that
asked for them. Marked `sim`: the workers are real."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from support import LINT_PROBES, lint_probes, parent_and_command

from pypto_tui.sim import jobs, runner, zygote_client

pytestmark = pytest.mark.sim
SLEEPER = "import time\ntime.sleep(120)\n"


def probe_job(name: str) -> jobs.SimJob:
    return jobs.SimJob(kind="verify", kernel_source=lint_probes().probe_source(name), label=name, task_file=str(
        LINT_PROBES / "exp_task.py"), inputs=(jobs.InputSpec((64, 512), "fp32"),))


def _answer(r: jobs.SimResult) -> tuple[object, ...]:
    return r.status, r.passed, tuple(r.passes_checked or ()), r.error, r.reason


def test_a_forked_worker_answers_as_a_fresh_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass, and a compile error whose real reason is read from the job's own log folder."""
    names = ["plain", "binary_op_128k_tile"]
    parents: list[bytes] = []

    def note_parent(_job: jobs.SimJob, _stage: str) -> None:
        for pid in runner.live_workers():
            with contextlib.suppress(OSError, IndexError):
                parents.append(parent_and_command(parent_and_command(pid)[0])[1])

    warm = runner.run_many([probe_job(n) for n in names], jobs=1, cache=False, status=note_parent)
    assert parents and all(b"pypto_tui.sim.zygote" in p for p in parents), parents
    monkeypatch.setenv(zygote_client.WARM_ENV, "0")
    fresh = runner.run_many([probe_job(n) for n in names], jobs=1, cache=False)
    assert [_answer(r) for r in warm] == [_answer(r) for r in fresh]
    assert warm[0].status == jobs.OK and warm[0].passed and len(warm[0].passes_checked or ()) > 1
    assert "exceeds MEM_UB size" in f"{warm[1].error} {warm[1].reason}"


def test_a_timeout_kills_a_forked_worker_and_the_next_job_still_runs(alive) -> None:
    pids: list[int] = []
    slow = jobs.SimJob(kind="cost", kernel_source=SLEEPER, inputs=(jobs.InputSpec((4,)),), label="sleeper")
    r = runner.run_one(slow, cache=False, timeout_s=8.0, status=lambda _j, _s: pids.extend(runner.live_workers()))
    assert r.status == jobs.TIMEOUT
    time.sleep(0.3)
    assert pids and not any(alive(p) for p in pids)
    again = runner.run_one(probe_job("plain"), cache=False)
    assert again.status == jobs.OK and again.passed


OWNER = textwrap.dedent("""
    import sys
    from pypto_tui.sim import jobs, runner

    def tell(_job, _stage):
        print("workers", *runner.live_workers(), flush=True)

    job = jobs.SimJob(kind="cost", kernel_source=%r, inputs=(jobs.InputSpec((4,)),), label="sleeper")
    runner.run_one(job, cache=False, timeout_s=300, status=tell)
""") % SLEEPER


def test_the_warm_parent_and_its_workers_end_with_a_killed_owner(alive) -> None:
    owner = subprocess.Popen([sys.executable, "-c", OWNER], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    line = owner.stdout.readline().split()
    assert line and line[0] == "workers" and len(line) > 1, line
    worker = int(line[1])
    zygote = parent_and_command(worker)[0]
    assert b"pypto_tui.sim.zygote" in parent_and_command(zygote)[1]
    os.kill(owner.pid, signal.SIGKILL)
    owner.wait()
    deadline = time.monotonic() + 10
    while (alive(worker) or alive(zygote)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(worker) and not alive(zygote)
