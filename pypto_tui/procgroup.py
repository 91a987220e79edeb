"""Run untrusted code (a task file) in a subprocess of its own process group, with a timeout.

A task file is code: `contract --run` and the app's self-check execute it. `subprocess.run` with
a timeout kills only the direct child, so a process the task started (a `sleep`, a data loader
worker) outlived the timeout; and with `capture_output` a grandchild that still holds stdout open
made a finished run wait for the pipe until the timeout, a false "timeout". Here the child starts a
new session (its own process group, never ours), writes its output to a file rather than a pipe,
and when it ends or times out the whole group is killed, leftovers included.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GroupRun:
    returncode: int | None
    """The child's exit status; None when it was stopped at the timeout."""
    output: str
    """The last few KB of what it printed (stdout and stderr together)."""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def run_in_group(cmd: Sequence[str], *, timeout: float, cwd: Path, env: Mapping[str, str] | None = None,
                 tail_bytes: int = 4000) -> GroupRun:
    """Run `cmd` in a new process group, output to `cwd/output.log`; kill the group when done."""
    log = Path(cwd) / "output.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=dict(env) if env is not None else None,
                                stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            kill_group(proc)
    try:
        data = log.read_bytes()[-tail_bytes:]
    except OSError:
        data = b""
    return GroupRun(rc, data.decode("utf-8", errors="replace"))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group `proc` leads, then reap `proc`. The child started a new session,
    so the group id is its pid, which is never ours; a group id is not reused while any member
    lives, so this reaches the leftovers even after the child itself has exited."""
    if proc.pid != os.getpgrp():
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, OSError):
        proc.kill()
    proc.wait()
