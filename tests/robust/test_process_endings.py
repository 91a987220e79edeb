"""Issue 25, item 2: every process a task starts ends with the tool, on every signal and on a normal
exit: a child, a child in a new session (its own process group), and an orphan (its parent exited).

The procgroup tests below need no torch (the "runner" is a small script); the command-line tests run
`contract --run` on a task that starts such processes at import, so they need torch (slow-only)."""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile import MODEL_HEAD, MODEL_TAIL
from support import PYPTO_TUI

from pypto_tui import procgroup

HAS_TORCH = importlib.util.find_spec("torch") is not None
LINUX = sys.platform.startswith("linux")
PROCGROUP = Path(procgroup.__file__).resolve()
pytestmark = pytest.mark.skipif(not LINUX, reason="the subreaper and /proc are Linux's")


def _marked(marker: str) -> list[int]:
    """Live processes (zombies aside) whose environment carries `marker`: everything a test started."""
    parents = procgroup._parents() or {}
    out = []
    for pid in parents:
        try:
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if f"PYPTO_TUI_TEST_MARK={marker}".encode() in env.split(b"\0") and pid != os.getpid():
            out.append(pid)
    return out


def _settle(marker: str, seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while (alive := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def _cleanup(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


SPAWN = """
import os, subprocess, sys
subprocess.Popen(["sleep", "300"])                             # a child
subprocess.Popen(["sleep", "301"], start_new_session=True)     # a child in a session of its own
if os.fork() == 0:                                              # an orphan: its parent exits at once
    subprocess.Popen(["sleep", "302"], start_new_session=True)
    os._exit(0)
os.wait()
"""


def _runner_script(tmp_path: Path, then: str) -> Path:
    """A stand-in for the baseline runner: guards itself as the real one does, then runs task-like code."""
    script = tmp_path / "runner.py"
    script.write_text(
        "import importlib.util, sys, time\n"
        f"spec = importlib.util.spec_from_file_location('pg', {str(PROCGROUP)!r})\n"
        "pg = importlib.util.module_from_spec(spec); sys.modules['pg'] = pg; spec.loader.exec_module(pg)\n"
        "pg.guard_task_runner(cleanup=[__import__('pathlib').Path.cwd()])\n"
        + SPAWN + "open('ready', 'w').write('x')\n" + then)
    return script


def _start(tmp_path: Path, marker: str, then: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYPTO_TUI_TEST_MARK": marker, procgroup.PARENT_ENV: str(os.getpid())}
    proc = subprocess.Popen([sys.executable, str(_runner_script(tmp_path, then))], cwd=tmp_path, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 30
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def test_a_normal_exit_ends_every_process_the_code_started(tmp_path: Path) -> None:
    marker = f"exit-{os.getpid()}"
    proc = _start(tmp_path, marker, "")
    assert proc.wait(timeout=30) == 0
    alive = _settle(marker)
    _cleanup(alive)
    assert alive == []


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_to_the_runner_ends_everything_below_it(tmp_path: Path, sig: str) -> None:
    marker = f"{sig}-{os.getpid()}"
    proc = _start(tmp_path, marker, "time.sleep(120)\n")
    assert len(_marked(marker)) >= 4  # the runner, the child, the new-session child, the orphan
    proc.send_signal(getattr(signal, sig))
    assert proc.wait(timeout=30) == 128 + getattr(signal, sig)
    alive = _settle(marker)
    _cleanup(alive)
    assert alive == []


def test_kill_tree_from_outside_reaches_the_new_session_and_the_orphan(tmp_path: Path) -> None:
    """What the tool does at a timeout: freeze and kill the runner's tree (it holds the orphans)."""
    marker = f"tree-{os.getpid()}"
    proc = _start(tmp_path, marker, "time.sleep(120)\n")
    procgroup.kill_group(proc)  # type: ignore[arg-type]
    alive = _settle(marker)
    _cleanup(alive)
    assert alive == [] and proc.returncode == -signal.SIGKILL


def test_the_runner_ends_its_processes_and_folder_when_the_tool_is_killed(tmp_path: Path) -> None:
    """SIGKILL to the tool: the runner gets SIGTERM (parent-death signal), ends the task's processes and
    removes the work folder the tool can no longer remove."""
    marker = f"orphaned-{os.getpid()}"
    work = tmp_path / "pypto-tui-selfcheck-x"
    work.mkdir()
    tool = (
        "import os, subprocess, sys, time\n"
        f"env = {{**os.environ, 'PYPTO_TUI_TEST_MARK': {marker!r}, {procgroup.PARENT_ENV!r}: str(os.getpid())}}\n"
        f"subprocess.Popen([sys.executable, {str(_runner_script(work, 'time.sleep(120)'))!r}], cwd={str(work)!r},"
        " env=env, start_new_session=True)\n"
        "time.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", tool])
    deadline = time.monotonic() + 30
    while not (work / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (work / "ready").exists()
    parent.kill()
    parent.wait()
    alive = _settle(marker, 10)
    _cleanup(alive)
    assert alive == [] and not work.exists()


def test_stop_all_ends_a_run_waiting_in_another_thread(tmp_path: Path) -> None:
    """The app quits while its self-check thread waits on the runner: stop_all ends the runner's tree,
    and the thread (which the interpreter joins at exit) returns at once."""
    import threading

    marker = f"stopall-{os.getpid()}"
    script = _runner_script(tmp_path, "time.sleep(120)\n")
    env = {**os.environ, "PYPTO_TUI_TEST_MARK": marker}
    results: list[procgroup.GroupRun] = []
    waiter = threading.Thread(target=lambda: results.append(
        procgroup.run_in_group([sys.executable, str(script)], timeout=120, cwd=tmp_path, env=env)))
    waiter.start()
    deadline = time.monotonic() + 30
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert procgroup.stop_all() == 1
    waiter.join(timeout=20)
    alive = _settle(marker)
    _cleanup(alive)
    assert not waiter.is_alive() and alive == [] and results[0].returncode == -signal.SIGKILL


# ------------------------------------------------------------------------------- the command line
def _spawning_task(tmp_path: Path, slow: bool) -> Path:
    ready = tmp_path / "ready"
    body = (MODEL_HEAD + "import os, subprocess, time\n" + SPAWN + f"open({str(ready)!r}, 'w').write('x')\n\n"
            "def get_inputs():\n    return [torch.randn(16, 256)]\n" + MODEL_TAIL)
    if slow:
        body = body.replace("return torch.relu(x)", "time.sleep(120)\n        return torch.relu(x)")
    task = tmp_path / "spawner.py"
    task.write_text(body)
    return task


def _default_signals() -> None:
    """The child starts with SIGINT at its default, as from a terminal: an ignored SIGINT is
    inherited across exec (in CI one pytest worker had it ignored, and the child never ended)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.torch
@pytest.mark.skipif(not HAS_TORCH, reason="needs CPU torch: pip install torch==2.13.0")
@pytest.mark.parametrize("ending", ["normal", "SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_contract_run_leaves_nothing_behind(tmp_path: Path, ending: str) -> None:
    marker = f"cli-{ending}-{os.getpid()}"
    temp = tmp_path / "tmp"
    temp.mkdir()
    task = _spawning_task(tmp_path, slow=ending != "normal")
    env = {**os.environ, "PYPTO_TUI_TEST_MARK": marker, "TMPDIR": str(temp), "NO_COLOR": "1"}
    proc = subprocess.Popen([PYPTO_TUI, "contract", str(task), "--run", "--timeout", "100", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            preexec_fn=_default_signals)
    if ending == "normal":
        out, _ = proc.communicate(timeout=120)
        assert proc.returncode == 0 and json.loads(out)["selfcheck"]["status"] == "agree"
    else:
        deadline = time.monotonic() + 60
        while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert (tmp_path / "ready").exists()
        proc.send_signal(getattr(signal, ending))
        proc.communicate(timeout=30)
        assert proc.returncode in (128 + getattr(signal, ending), -getattr(signal, ending), 130)
    alive = _settle(marker, 10)
    _cleanup(alive)
    assert alive == []
    assert glob.glob(str(temp / "pypto-tui-selfcheck-*")) == []


# ------------------------------------------------------------------------- verify and sim (the compiler)
HAS_PYPTO = importlib.util.find_spec("pypto") is not None


@pytest.mark.sim
@pytest.mark.skipif(not (HAS_TORCH and HAS_PYPTO), reason="needs the [sim] extra (pypto==0.2.0, CPU torch)")
@pytest.mark.parametrize(("command", "ending"), [
    ("verify", "normal"), ("verify", "SIGHUP"), ("verify", "SIGTERM"),
    ("sim", "SIGHUP"), ("sim", "SIGKILL"),
])
def test_verify_and_sim_leave_no_task_process_behind(tmp_path: Path, command: str, ending: str) -> None:
    """verify runs the task's code inside a compiler worker forked from the warm parent: whatever it
    starts (a child, a new-session child, an orphan) ends with the command, after a PASS and on each
    signal. sim runs no task code, but its compiler worker must not outlive it either."""
    marker = f"{command}-{ending}-{os.getpid()}"
    task = _spawning_task(tmp_path, slow=ending != "normal")
    env = {**os.environ, "PYPTO_TUI_TEST_MARK": marker, "PYPTO_TUI_CACHE_DIR": str(tmp_path / "cache"),
           "NO_COLOR": "1"}
    for name in ("PYPTO_TUI_SHARED_ZYGOTE", "PYPTO_TUI_WORKER"):
        env.pop(name, None)
    proc = subprocess.Popen([PYPTO_TUI, command, str(task), "--no-cache", "--timeout", "200", "--json"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            preexec_fn=_default_signals)

    def started() -> bool:
        """verify imports the task (its children say so by the "ready" file); sim never runs task code,
        so what must end with it is the compiler worker it started."""
        if command == "verify":
            return (tmp_path / "ready").exists()
        return any(pid != proc.pid for pid in _marked(marker))

    if ending == "normal":
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert json.loads(out)["passed"] is True
    else:
        deadline = time.monotonic() + 120
        while not started() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert started(), proc.stderr.read() if proc.poll() is not None else "nothing started"
        time.sleep(0.5)  # the task's children (or the worker's imports) are under way
        proc.send_signal(getattr(signal, ending))
        proc.communicate(timeout=60)
        assert proc.returncode in (128 + getattr(signal, ending), -getattr(signal, ending))
    alive = _settle(marker, 15)
    _cleanup(alive)
    assert alive == []
