"""Suites through the real compiler: the small fixture folder (three tiny tasks and one that
fails on purpose) on the local pool and on a real two-worker Dask LocalCluster gives the same
records; a suite killed with kill -9 resumes without redoing or losing a finished task."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

SMALL = Path(__file__).parent / "fixtures" / "suite_small"
TASKS = ["relu_tiny.py", "scale_tiny.py", "sort_fails.py", "sum_rows_tiny.py"]
# what decides a verdict, from the verify command's own record (times and peaks differ run to run)
SAME = ("passed", "supported", "shapes", "tile", "loop_count", "passes_checked", "missing_passes",
        "first_failing_pass", "max_abs_err", "criterion", "kernel")


def suite(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pypto_tui", "verify", str(SMALL), *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "NO_COLOR": "1"})


def records(doc: dict[str, Any]) -> dict[str, Any]:
    return {t["name"]: (t["verdict"], t["exit_code"], t["family"], t["design"], {k: t["record"].get(k) for k in SAME})
            for t in doc["tasks"]}


@pytest.mark.sim
def test_local_pool_and_a_two_worker_local_cluster_give_the_same_records(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    db = tmp_path / "runs.sqlite"
    local = suite("--db", str(db), "--no-cache", "--workers", "2", "--json")
    assert local.returncode == 1, local.stderr  # sort_fails.py fails the suite
    a = json.loads(local.stdout)
    assert [t["name"] for t in a["tasks"]] == TASKS
    assert {n: v[0] for n, v in records(a).items()} == {"relu_tiny.py": "pass", "scale_tiny.py": "pass",
                                                        "sort_fails.py": "unsupported", "sum_rows_tiny.py": "pass"}
    assert a["totals"]["passed"] == 3 and a["run"]["workers"] == 2 and a["pool"] == "local"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, resources={"memory": 6000},
                                  dashboard_address=None) as cluster:
        dask = suite("--db", str(db), "--no-cache", "--scheduler", cluster.scheduler_address, "--json")
    assert dask.returncode == 1, dask.stderr
    b = json.loads(dask.stdout)
    assert b["pool"] == "dask" and b["run"]["scheduler"] == cluster.scheduler_address
    assert records(b) == records(a)
    diff = subprocess.run([sys.executable, "-m", "pypto_tui", "runs", "diff", "last-1", "last", "--db", str(db),
                           "--json"], capture_output=True, text=True, timeout=120)
    assert diff.returncode == 0 and json.loads(diff.stdout)["newly_failing"] == []


def _recorded(db: Path) -> list[tuple[str, str]]:
    if not db.exists():
        return []
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return list(conn.execute("SELECT name, finished_at FROM tasks ORDER BY name"))
    except sqlite3.OperationalError:  # the suite has not created its tables yet
        return []


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.sim
def test_a_suite_killed_with_kill_9_resumes_without_redoing_finished_tasks(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    proc = subprocess.Popen([sys.executable, "-m", "pypto_tui", "verify", str(SMALL), "--db", str(db), "--workers",
                             "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not _recorded(db) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    while not _children(proc.pid) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)  # the next task's command is starting
    children = _children(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _recorded(db)
    assert 1 <= len(before) < len(TASKS)
    assert children  # the next task's command was running: it must not outlive the suite (leash.py)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in children) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(Path(f"/proc/{pid}").exists() for pid in children)
    listed = subprocess.run([sys.executable, "-m", "pypto_tui", "runs", "--db", str(db), "--json"],
                            capture_output=True, text=True, timeout=120)
    run = json.loads(listed.stdout)["runs"][0]
    assert (run["status"], run["live_status"]) == ("running", "killed")  # it had no chance to say so itself
    resumed = suite("--db", str(db), "--resume", "--json")
    assert resumed.returncode == 1, resumed.stderr
    d = json.loads(resumed.stdout)
    assert d["resumed"] == [name for name, _ in before] and d["run"]["id"] == 1 and d["run"]["status"] == "finished"
    after = _recorded(db)
    assert [name for name, _ in after] == TASKS  # every task recorded once
    assert set(before) <= set(after)  # the finished ones kept their rows: not run again
    again = suite("--db", str(db), "--resume")
    assert again.returncode == 2 and "no unfinished" in again.stderr


SLOW_TASK = '''import time

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    time.sleep(300)  # the baseline never gets its inputs while the suite runs
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
'''


def _task_commands(marker: str) -> list[int]:
    """Live processes with `marker` in their command line: the task's verify command on the worker
    and whatever it started (the baseline runner that sleeps in get_inputs)."""
    found = []
    for cmd in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            argv = cmd.read_bytes().split(b"\0")
        except OSError:
            continue
        if any(marker.encode() in a for a in argv) and int(cmd.parent.name) != os.getpid():
            found.append(int(cmd.parent.name))
    return found


@pytest.mark.sim
def test_ctrl_c_on_a_dask_suite_stops_the_commands_on_the_workers(tmp_path: Path) -> None:
    """Ctrl+C (SIGINT) to `verify DIR --scheduler`: the suite ends, says the run was interrupted, and
    the task command running on a worker is stopped; the workers stay up for the next suite."""
    distributed = pytest.importorskip("distributed")
    folder = tmp_path / "slow_suite"
    folder.mkdir()
    (folder / "sleepy_relu.py").write_text(SLOW_TASK)
    db = tmp_path / "runs.sqlite"
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        proc = subprocess.Popen([sys.executable, "-m", "pypto_tui", "verify", str(folder), "--db", str(db),
                                 "--scheduler", cluster.scheduler_address, "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        deadline = time.monotonic() + 120
        while not _task_commands("sleepy_relu") and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        running = _task_commands("sleepy_relu")
        assert running, proc.stderr.read() if proc.poll() is not None else "no task command started"
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
        assert proc.returncode != 0 and "Traceback" not in err, err
        deadline = time.monotonic() + 30
        while _task_commands("sleepy_relu") and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _task_commands("sleepy_relu")  # stopped on the worker, not left to sleep out its 300 s
        with distributed.Client(cluster.scheduler_address, timeout=20) as client:
            assert len(client.scheduler_info()["workers"]) == 1  # the worker itself stays up
    with sqlite3.connect(db, timeout=30) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
