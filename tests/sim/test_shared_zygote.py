"""A suite slot's shared warm parent (`zygote --listen`, suite/warm_slots.py): the jobs of one
command after another are forked by the same zygote and answer as a command's own zygote would;
a command that goes away takes its workers with it and the zygote serves the next; a suite leaves
no zygote behind. Marked `sim`: the workers are real."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import parent_and_command
from test_zygote import SLEEPER, probe_job

from pypto_tui.sim import jobs, runner, zygote_client
from pypto_tui.suite.warm_slots import shared_zygotes

pytestmark = pytest.mark.sim


def _answer(r: jobs.SimResult) -> tuple[object, ...]:
    return r.status, r.passed, tuple(r.passes_checked or ()), r.error, r.reason


COMMANDS: dict[int, bytes] = {}
"""The command line of each worker parent seen, read while it lived."""


def _worker_parents(job: jobs.SimJob, **kw: object) -> tuple[jobs.SimResult, set[int]]:
    parents: set[int] = set()

    def note(_job: jobs.SimJob, _stage: str) -> None:
        for pid in runner.live_workers():
            with contextlib.suppress(OSError):
                parent = parent_and_command(pid)[0]
                COMMANDS.setdefault(parent, parent_and_command(parent)[1])
                parents.add(parent)

    return runner.run_one(job, cache=False, status=note, **kw), parents  # type: ignore[arg-type]


def test_commands_one_after_another_fork_from_the_slot_zygote(monkeypatch: pytest.MonkeyPatch, alive) -> None:
    with shared_zygotes(1, dict(os.environ)) as slots:
        path = slots[0][zygote_client.SHARED_ENV]
        monkeypatch.setenv(zygote_client.SHARED_ENV, path)
        zygote_client.shutdown()
        first, parents_1 = _worker_parents(probe_job("plain"))
        zygote_client.shutdown()  # the command ends: its connection closes
        second, parents_2 = _worker_parents(probe_job("binary_op_128k_tile"))
        zygote_client.shutdown()
        assert len(parents_1) == 1 and parents_1 == parents_2, (parents_1, parents_2)
        shared = parents_1.pop()
        assert COMMANDS[shared].split(b"\0")[-3:-1] == [b"--listen", path.encode()]
        # a command gone mid-job: its worker is killed, and the zygote serves the next command
        pids: list[int] = []
        slow = jobs.SimJob(kind="cost", kernel_source=SLEEPER, inputs=(jobs.InputSpec((4,)),), label="sleeper")
        timed_out = runner.run_one(slow, cache=False, timeout_s=6.0, status=lambda _j, _s: pids.extend(
            runner.live_workers()))
        zygote_client.shutdown()
        assert timed_out.status == jobs.TIMEOUT and pids and all(not alive(p) for p in pids)
        third, parents_3 = _worker_parents(probe_job("plain"))
        zygote_client.shutdown()
        assert parents_3 == {shared} and alive(shared)
        monkeypatch.delenv(zygote_client.SHARED_ENV)
        own = runner.run_one(probe_job("binary_op_128k_tile"), cache=False)
        zygote_client.shutdown()
    deadline = time.monotonic() + 10
    while alive(shared) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(shared) and not Path(path).exists()  # the suite's end ends its zygotes
    assert _answer(first) == _answer(third) and first.status == jobs.OK and first.passed
    assert _answer(second) == _answer(own) and "exceeds MEM_UB size" in f"{second.error} {second.reason}"


def test_a_socket_nobody_listens_on_falls_back_to_a_zygote_of_its_own(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.setenv(zygote_client.SHARED_ENV, str(tmp_path / "nobody.sock"))
    zygote_client.shutdown()
    result, parents = _worker_parents(probe_job("plain"))
    zygote_client.shutdown()
    assert result.status == jobs.OK and result.passed
    assert len(parents) == 1 and COMMANDS[parents.pop()].endswith(b"pypto_tui.sim.zygote\0")


def test_a_shared_zygote_ends_with_the_suite_that_started_it(alive) -> None:
    owner = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from pypto_tui.suite.warm_slots import shared_zygotes\n"
        "with shared_zygotes(2, dict(os.environ)) as slots:\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(300)\n")], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline().strip() == "ready"
    deadline = time.monotonic() + 10
    zygotes: list[int] = []
    while len(zygotes) < 2 and time.monotonic() < deadline:
        zygotes = [int(p.parent.name) for p in Path("/proc").glob("[0-9]*/cmdline")
                   if _is_listener_of(p, owner.pid)]
        time.sleep(0.05)
    assert len(zygotes) == 2
    owner.kill()  # kill -9: no chance to stop them itself
    owner.wait()
    deadline = time.monotonic() + 20
    while any(alive(z) for z in zygotes) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(z) for z in zygotes)


def _is_listener_of(cmdline: Path, owner: int) -> bool:
    try:
        return b"--listen" in cmdline.read_bytes() and parent_and_command(int(cmdline.parent.name))[0] == owner
    except (OSError, ValueError):
        return False
