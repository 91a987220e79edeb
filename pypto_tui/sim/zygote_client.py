"""The runner's side of the warm parent (zygote.py): ask it for a worker, and handle that worker
like the `subprocess.Popen` it replaces (pid, poll, wait, kill), so the runner's timeouts, group
kills and stage relays stay as they are.

One zygote per process that runs jobs, started on the first job and kept for the next ones (a
suite, a sweep, the app's repeated verifies). If it cannot start, or dies, jobs fall back to a
fresh interpreter each, as before; `PYPTO_TUI_WARM_WORKERS=0` asks for that fallback always.
When PYPTO_TUI_SHARED_ZYGOTE names a suite's shared zygote (zygote.listen), the process connects
to it instead of starting its own; if it cannot, it starts its own as above.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from pypto_tui.procgroup import PARENT_ENV

WARM_ENV = "PYPTO_TUI_WARM_WORKERS"
SHARED_ENV = "PYPTO_TUI_SHARED_ZYGOTE"
_START_TIMEOUT_S = 120.0


class WarmChild:
    """A worker forked by the zygote. Not our child, so its exit status comes from the zygote."""

    def __init__(self, pid: int, args: list[str]) -> None:
        self.pid, self.args = pid, args
        self.returncode: int | None = None
        self._ended = threading.Event()

    def _exited(self, status: int) -> None:
        self.returncode = status
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired(self.args, timeout or 0.0)
        return self.returncode if self.returncode is not None else -signal.SIGKILL

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.pid, signal.SIGKILL)


class _Pipes:
    """A zygote of our own, spoken to over its stdin and stdout."""

    def __init__(self, env: Mapping[str, str]) -> None:
        # OpenBLAS (numpy's) starts a thread pool at import; with one thread it starts none, and
        # the zygote must stay single-threaded to fork safely. Numpy's share of a job is small.
        self.proc = subprocess.Popen([sys.executable, "-m", "pypto_tui.sim.zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env={**env, "OPENBLAS_NUM_THREADS": "1"}, start_new_session=True)
        self.pid = self.proc.pid
        assert self.proc.stdout is not None
        self.lines = self.proc.stdout

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin:
                self.proc.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


class _Shared:
    """A suite's zygote, spoken to over a Unix socket; its pid comes with its `ready`."""

    def __init__(self, path: str) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.sock.connect(path)
        except OSError:
            self.sock.close()
            raise
        self.pid = 0
        self.lines = self.sock.makefile("rb")

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:  # the zygote kills this command's workers and waits for the next
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(OSError):
            self.lines.close()
        self.sock.close()


def _channel(env: Mapping[str, str]) -> _Pipes | _Shared:
    path = os.environ.get(SHARED_ENV, "")
    if path:
        with contextlib.suppress(OSError):
            return _Shared(path)
    return _Pipes({k: v for k, v in env.items() if k != SHARED_ENV})


class _Zygote:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.channel = _channel(env)
        self.lock = threading.Lock()
        self.next_id = 0
        self.waiting: dict[int, tuple[threading.Event, list[int]]] = {}
        self.children: dict[int, WarmChild] = {}
        self.early: dict[int, int] = {}  # exits read before their `started` was handled
        self.ready = threading.Event()
        self.alive = True
        threading.Thread(target=self._read, name="pypto-tui-zygote", daemon=True).start()

    @property
    def shared(self) -> bool:
        return isinstance(self.channel, _Shared)

    def _read(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a socket closed under us ends the same way
            for raw in self.channel.lines:
                self._line(raw)
        with self.lock:  # the zygote is gone: its children are gone too (it killed them, or they it)
            self.alive = False
            orphans = list(self.children.values())
            self.children.clear()
            for event, _ in self.waiting.values():
                event.set()
            self.waiting.clear()
        self.ready.set()
        for child in orphans:
            child._exited(-signal.SIGKILL)

    def _line(self, raw: bytes) -> None:
        word, *rest = raw.decode(errors="replace").split()
        if word == "ready":
            if rest and rest[0].isdigit():
                self.channel.pid = int(rest[0])
            self.ready.set()
        elif word == "started" and len(rest) == 2:
            with self.lock:
                event, box = self.waiting.pop(int(rest[0]), (None, []))
            box.append(int(rest[1]))
            if event is not None:
                event.set()
        elif word == "exit" and len(rest) == 2:
            pid, status = int(rest[0]), int(rest[1])
            with self.lock:
                child = self.children.pop(pid, None)
                if child is None:
                    self.early[pid] = status
            if child is not None:
                child._exited(status)

    def spawn(self, argv: list[str], stderr_path: Path, env: Mapping[str, str]) -> WarmChild | None:
        """Fork a worker for `argv` (`python -m pypto_tui.sim.worker JOB RESULT`), or None when
        the zygote cannot (the caller then starts a fresh interpreter)."""
        if not self.ready.wait(_START_TIMEOUT_S) or not self.alive:
            return None
        event, box = threading.Event(), list[int]()
        with self.lock:
            if not self.alive:
                return None
            self.next_id += 1
            rid = self.next_id
            self.waiting[rid] = (event, box)
            child_env = {k: v for k, v in env.items() if k != SHARED_ENV}
            request = {"id": rid, "job": argv[-2], "result": argv[-1], "stderr": str(stderr_path),
                       "cwd": os.getcwd(), "env": {**child_env, PARENT_ENV: str(self.channel.pid)}}
            try:
                self.channel.send(json.dumps(request).encode() + b"\n")
            except (OSError, ValueError):
                self.waiting.pop(rid, None)
                return None
        if not event.wait(_START_TIMEOUT_S) or not box:
            return None
        child = WarmChild(box[0], argv)
        with self.lock:
            status = self.early.pop(child.pid, None)
            if status is None and self.alive:
                self.children[child.pid] = child
        if status is not None:
            child._exited(status)
        elif not self.alive:
            child._exited(-signal.SIGKILL)
        return child

    def close(self) -> None:
        self.channel.close()


_LOCK = threading.Lock()
_ZYGOTE: _Zygote | None = None


def warm_workers_enabled() -> bool:
    return os.environ.get(WARM_ENV, "1") != "0"


def spawn(argv: list[str], stderr_path: Path, env: Mapping[str, str]) -> WarmChild | None:
    """A worker forked from this process's zygote (started now if need be), or None."""
    global _ZYGOTE
    if not warm_workers_enabled():
        return None
    with _LOCK:
        if _ZYGOTE is None or not _ZYGOTE.alive:
            try:
                _ZYGOTE = _Zygote(env)
            except OSError:
                return None
        zygote = _ZYGOTE
    return zygote.spawn(argv, stderr_path, env)


def shutdown() -> None:
    """Stop the zygote (its children end with it); the next job starts a new one."""
    global _ZYGOTE
    with _LOCK:
        zygote, _ZYGOTE = _ZYGOTE, None
    if zygote is not None:
        zygote.close()


atexit.register(shutdown)
