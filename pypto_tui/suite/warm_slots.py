"""One shared compiler zygote per local worker slot (sim/zygote.py, `--listen`).

Why: each task of a suite is its own `verify` (or `sim`) command, and each command started its own
warm parent, importing torch again: about 3 s a task, most of a small task's time, paid a hundred
times over a level. A slot's zygote is started once and found by the slot's task commands through
PYPTO_TUI_SHARED_ZYGOTE; a slot runs one task at a time, so one command at a time speaks to it.
Isolation is unchanged: every job is still a fresh fork of a process that never compiled, and a
command's workers are killed when its connection closes. A slot whose zygote failed to start
costs nothing: its commands find no socket and start their own, as before.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from pypto_tui.procgroup import PARENT_ENV
from pypto_tui.sim.zygote_client import SHARED_ENV, warm_workers_enabled

STOP_GRACE_S = 5.0
LISTEN_WAIT_S = 10.0


def _wait_listening(folder: Path, procs: list[subprocess.Popen[bytes]]) -> None:
    """Until every zygote has bound its socket (it does so before its imports, within a fraction
    of a second), so the first task's command finds it rather than starting its own."""
    deadline = time.monotonic() + LISTEN_WAIT_S
    for i, proc in enumerate(procs):
        while not (folder / f"slot{i}.sock").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)


@contextlib.contextmanager
def shared_zygotes(count: int, env: dict[str, str]) -> Iterator[list[dict[str, str]]]:
    """`count` zygotes for the duration of the block; per slot, the environment its task commands
    get (empty when warm workers are off, then commands start their own as before)."""
    if count <= 0 or not warm_workers_enabled():
        yield [{} for _ in range(max(count, 0))]
        return
    folder = Path(tempfile.mkdtemp(prefix="pypto-tui-zygotes-"))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        slots = []
        for i in range(count):
            path = folder / f"slot{i}.sock"
            procs.append(subprocess.Popen([sys.executable, "-m", "pypto_tui.sim.zygote", "--listen", str(path)],
                                          env={**env, "OPENBLAS_NUM_THREADS": "1", PARENT_ENV: str(os.getpid())},
                                          stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL, start_new_session=True))
            slots.append({SHARED_ENV: str(path)})
        _wait_listening(folder, procs)
        yield slots
    finally:
        for proc in procs:
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(timeout=STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
