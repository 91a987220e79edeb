"""Run untrusted code (a task file) in a subprocess, and make sure nothing it starts outlives us.

A task file is code: `contract --run`, the app's self-check and `verify` execute it. `subprocess.run`
with a timeout kills only the direct child, so a process the task started (a `sleep`, a data loader
worker) outlived the timeout; and with `capture_output` a grandchild that still holds stdout open
made a finished run wait for the pipe until the timeout, a false "timeout". A process group is not
enough either: a task may start a child in a *new session* (its own group), and a child whose
parent exits is handed to init, out of reach.

So the ends are tied at both sides (Linux; elsewhere the process group is what remains):

- the runner (the process that executes task code) calls `guard_task_runner` first: it becomes a
  *child subreaper* (`prctl(PR_SET_CHILD_SUBREAPER)`), so every orphaned descendant, whatever
  session it started, is re-parented to the runner instead of init; it asks for SIGTERM when its
  parent dies (`PR_SET_PDEATHSIG`: the tool was killed, even with SIGKILL); and on SIGTERM, SIGHUP,
  SIGINT or a normal exit it kills every descendant it has, and, when its parent is gone, removes
  the work folders nobody else will;
- the parent starts the runner in a new session, its output to a file rather than a pipe, and
  stops it with `kill_tree`: it freezes the runner and each of its descendants (SIGSTOP, found
  through /proc, repeated until no new one appears, so none can fork past us), then SIGKILLs them
  all and the runner's group. While the runner is its subreaper, every descendant is in that tree;
- while `run_in_group` waits in the main thread, SIGTERM and SIGHUP end the tool through the
  normal way out (SystemExit), so the runner is stopped and the temp folders are removed.

This module is standard library only: the self-check's runner loads it by file path under an
interpreter that may not have pypto-tui installed.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

PARENT_ENV = "PYPTO_TUI_PARENT_PID"
"""The pid of the tool that started a runner (the runner's check that its parent still lives)."""

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_ENDING_SIGNALS = tuple(getattr(signal, n) for n in ("SIGTERM", "SIGHUP", "SIGINT") if hasattr(signal, n))


@dataclass(frozen=True)
class GroupRun:
    returncode: int | None
    """The child's exit status; None when it was stopped at the timeout."""
    output: str
    """The last few KB of what it printed (stdout and stderr together)."""

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


# ============================================================================ the parent's side
_LIVE: set[subprocess.Popen[bytes]] = set()
_LIVE_LOCK = threading.Lock()


def stop_all() -> int:
    """Stop every runner `run_in_group` is waiting on, from any thread (an app that quits while a
    self-check runs in a worker thread: the thread then returns at once). Returns how many."""
    with _LIVE_LOCK:
        victims = list(_LIVE)
    for proc in victims:
        if proc.poll() is None:
            kill_tree(proc.pid)
    return len(victims)


def run_in_group(cmd: Sequence[str], *, timeout: float, cwd: Path, env: Mapping[str, str] | None = None,
                 tail_bytes: int = 4000) -> GroupRun:
    """Run `cmd` in a new session, output to `cwd/output.log`; stop it and all it started when done."""
    log = Path(cwd) / "output.log"
    run_env = dict(os.environ if env is None else env)
    run_env[PARENT_ENV] = str(os.getpid())
    with log.open("wb") as out, signals_end_us():
        proc = subprocess.Popen(list(cmd), cwd=cwd, env=run_env, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out, start_new_session=True)
        with _LIVE_LOCK:
            _LIVE.add(proc)
        try:
            rc: int | None = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            kill_group(proc)
            with _LIVE_LOCK:
                _LIVE.discard(proc)
    try:
        data = log.read_bytes()[-tail_bytes:]
    except OSError:
        data = b""
    return GroupRun(rc, data.decode("utf-8", errors="replace"))


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop `proc` (started in a new session) with every process it started, then reap it.

    The tree (found through /proc) is frozen and killed first; then the group, which reaches the
    leftovers even after `proc` itself has exited (a group id is not reused while a member lives)."""
    if proc.poll() is None:
        kill_tree(proc.pid)
    if proc.pid != os.getpgrp():
        with contextlib.suppress(ProcessLookupError, PermissionError, OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, OSError):
        proc.kill()
    proc.wait()


@contextlib.contextmanager
def signals_end_us() -> Iterator[None]:
    """While the body runs (in the main thread), SIGTERM and SIGHUP raise SystemExit(128 + signal),
    so the `finally` clauses that stop the runner and remove temp folders run; Ctrl+C already raises
    KeyboardInterrupt. Elsewhere (a worker thread of the app) the body runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def end(signum: int, _frame: FrameType | None) -> None:
        sys.stderr.write(f"pypto-tui: {signal.Signals(signum).name}: stopping the task's processes\n")
        raise SystemExit(128 + signum)

    saved = {}
    for name in ("SIGTERM", "SIGHUP"):
        sig = getattr(signal, name, None)
        if sig is not None:
            saved[sig] = signal.signal(sig, end)
    try:
        yield
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)


# ============================================================================ process trees
def _parents() -> dict[int, int] | None:
    """pid -> parent pid of every live (not zombie) process, from /proc; None without /proc."""
    try:
        entries = os.listdir("/proc")
    except OSError:
        return None
    out: dict[int, int] = {}
    for name in entries:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it ended meanwhile
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, ...
        if len(fields) > 1 and fields[0] != b"Z":
            out[int(name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, their children, ...); [] without /proc."""
    parents = _parents()
    if not parents:
        return []
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], list(children.get(pid, ()))
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, ()))
    return out


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def kill_tree(pid: int, *, include_root: bool = True) -> int:
    """SIGKILL `pid` (unless `include_root` is False: the caller itself) and every descendant.

    Each is stopped first (SIGSTOP) and the tree read again until it stops growing, so a process
    cannot fork a new one between our look and our kill. Returns how many were killed."""
    frozen: set[int] = set()
    if include_root:
        _signal(pid, signal.SIGSTOP)
    for _ in range(100):
        new = [p for p in descendants(pid) if p not in frozen]
        if not new:
            break
        for p in new:
            _signal(p, signal.SIGSTOP)
        frozen.update(new)
    victims = [*frozen, *([pid] if include_root else [])]
    for p in victims:
        _signal(p, signal.SIGKILL)
    return len(victims)


# ============================================================================ the runner's side
def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Orphaned descendants of this process come to it rather than to init (Linux 3.4+); False when
    the system has no such thing (then only the process group holds them)."""
    return _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: int = signal.SIGTERM) -> bool:
    """Ask for `sig` when the parent (strictly: the thread that started us) ends (Linux)."""
    return _prctl(_PR_SET_PDEATHSIG, int(sig))


def end_descendants(wait_s: float = 2.0) -> int:
    """Kill every descendant of this process and reap the children among them (a subreaper's
    adopted orphans included). Returns how many were killed."""
    killed = kill_tree(os.getpid(), include_root=False)
    deadline = time.monotonic() + wait_s
    while killed and time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if pid == 0:
            time.sleep(0.01)
    return killed


def guard_task_runner(cleanup: Sequence[Path] = ()) -> bool:
    """Make this process (about to execute task code) end everything the task starts.

    Becomes a subreaper, asks for SIGTERM when the tool dies, ends its descendants on SIGTERM,
    SIGHUP, SIGINT and at a normal exit; if the tool that started it is gone, also removes
    `cleanup` (the tool would have). Returns whether the subreaper could be set."""
    parent = os.environ.get(PARENT_ENV, "")
    parent_pid = int(parent) if parent.isdigit() else None
    reaper = become_subreaper()
    die_with_parent(signal.SIGTERM)

    def orphaned() -> bool:
        return parent_pid is not None and os.getppid() != parent_pid

    def end(signum: int, _frame: FrameType | None) -> None:
        end_descendants()
        if orphaned():
            for path in cleanup:
                shutil.rmtree(path, ignore_errors=True)
        os._exit(128 + signum)

    for sig in _ENDING_SIGNALS:
        signal.signal(sig, end)
    atexit.register(end_descendants)  # registered first, so it runs after the task's own atexit hooks
    if orphaned():  # the tool died before the death signal was asked for
        end(signal.SIGTERM, None)
    return reaper
