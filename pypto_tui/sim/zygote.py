"""A warm parent for compiler workers: `python -m pypto_tui.sim.zygote`, forked once per job.

Why: a job needs a fresh process (a failed compile poisons pypto's state, see worker.py), and a
fresh interpreter spent about 4.4 s of a 6 s small verify importing torch and pypto (measured on
the 2-core CI machine: `python -c "import torch, pypto"` 4.39 s; the job's compile 0.37 s, its
interpreter run 0.96 s). This process imports them once; each job is a `fork()` of it, which
is as fresh as a new interpreter for what matters (no kernel was ever compiled here) and starts
in milliseconds, with pypto still to import (see _PRELOAD).

Protocol, one line each way (the runner's side is `runner._Zygote`):
- in, on stdin: a JSON object {"id", "job", "result", "stderr", "cwd", "env"};
- out, on stdout: `ready`, once the imports are done; `started ID PID` after each fork;
  `exit PID STATUS` when a child ends (STATUS as `os.waitstatus_to_exitcode`: -N for signal N).

The child becomes what `python -m pypto_tui.sim.worker JOB RESULT` would have been: a session of
its own (the runner kills its group on a timeout), fds 0/1/2 on /dev/null and the stderr file,
the runner's environment and cwd, and its exit handlers run at the end, since pypto completes
pass-verify's files there (passes.py).

This process stays single-threaded (fork copies only the calling thread, so a lock held by
another thread would stay locked in the child), and ends, killing its children's groups, when
the runner closes its stdin or dies.

Shared by a suite (`--listen PATH`): a suite runs each task as its own `verify` command, and each
command used to start a zygote of its own, importing torch again for every task (about 3 s a
task, most of a small task's time). A suite worker slot starts one zygote that listens on a Unix
socket; the task commands of that slot find it through PYPTO_TUI_SHARED_ZYGOTE and speak the same
protocol over the connection, one command at a time. When a command's connection closes (it
ended, or was killed) its workers' groups are killed, as at stdin's end above, and the zygote
waits for the next command. It ends with the suite.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import time
from collections.abc import Iterable
from typing import Any

_PRELOAD = ("numpy", "torch")
"""What every job imports, but pypto: its logger takes ASCEND_PROCESS_LOG_PATH when the library
loads, and the real reasons of compile errors are read from the job's own log folder (measured:
with pypto preloaded, "exceeds MEM_UB size" went to the zygote's log and the job said only
"Run pass failed"). So each child imports pypto itself, after pointing the environment at its
work dir (about 1.2 s of the 4.4 s)."""


def _preload() -> None:
    for name in _PRELOAD:
        with contextlib.suppress(Exception):  # the worker reports a missing or broken package itself
            __import__(name)
    import pypto_tui.sim.worker  # noqa: F401 - and the worker's own imports


def _become_worker(request: dict[str, Any], inherited: Iterable[int]) -> None:
    """In the child: never returns; exits with the worker's status through `_exit_like_c`.
    `inherited`: the zygote's own descriptors (its pipes or socket), closed here."""
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    null = os.open(os.devnull, os.O_RDONLY)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(null, 0)
    os.dup2(err, 1)
    os.dup2(err, 2)
    for fd in {null, err, *inherited} - {0, 1, 2}:
        with contextlib.suppress(OSError):
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    from pypto_tui.sim import worker

    sys.argv = ["pypto_tui.sim.worker", request["job"], request["result"]]
    try:
        status = worker.main([request["job"], request["result"]])
    except SystemExit as done:
        status = done.code if isinstance(done.code, int) else 1
    except BaseException:  # print it as a fresh interpreter would, then exit
        import traceback

        traceback.print_exc()
        status = 1
    _exit_like_c(status)


def _exit_like_c(status: int) -> None:
    """Run the exit handlers (Python's atexit hooks: ours, torch's, pypto's; then C's, where
    pypto completes pass-verify's files) but skip the interpreter's teardown of its modules: the
    teardown of torch and pypto took about 1.1 s of a 1.5 s exit and leaves nothing anyone reads.
    Measured: all pass-verify rows present either way."""
    import atexit
    import ctypes

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):  # a closed stream: nothing left to write
                stream.flush()
        try:
            ctypes.CDLL(None).exit(int(status))
        except (OSError, AttributeError):
            sys.exit(status)


class _Server:
    """The protocol over one pair of descriptors: stdin/stdout, or a suite's connection."""

    def __init__(self, in_fd: int, out_fd: int, also_close: tuple[int, ...] = ()) -> None:
        self.children: set[int] = set()
        self.in_fd, self.out_fd = in_fd, out_fd
        self.inherited = (in_fd, out_fd, *also_close)

    def say(self, line: str) -> None:
        data = line.encode() + b"\n"
        while data:
            data = data[os.write(self.out_fd, data):]

    def spawn(self, request: dict[str, Any]) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _become_worker(request, self.inherited)
        self.children.add(pid)
        self.say(f"started {request['id']} {pid}")

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            self.children.discard(pid)
            self.say(f"exit {pid} {os.waitstatus_to_exitcode(status)}")

    def end_children(self, wait_s: float = 0.0) -> None:
        """Kill every child's group; with `wait_s`, also reap them (a shared zygote must not hand
        one command's exits to the next)."""
        for pid in list(self.children):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)
        deadline = time.monotonic() + wait_s
        while self.children and time.monotonic() < deadline:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                time.sleep(0.01)
            self.children.discard(pid)

    def serve(self, parent: int, hello: str = "ready") -> int:
        """Until the other side closes (0) or `parent` is gone (1)."""
        pending = b""
        self.say(hello)
        while True:
            ready, _, _ = select.select([self.in_fd], [], [], 0.05)
            self.reap()
            if os.getppid() != parent:  # the runner died without closing our stdin
                self.end_children()
                return 1
            if not ready:
                continue
            try:
                chunk = os.read(self.in_fd, 65536)
            except OSError:  # a connection reset: the command is gone
                chunk = b""
            if not chunk:  # the runner closed our stdin (it exits, or stops using us)
                self.end_children()
                return 0
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                if line.strip():
                    self.spawn(json.loads(line))


def listen(path: str) -> int:
    """A suite's shared zygote: one command at a time on the Unix socket at `path`, until the
    suite (our parent) ends or sends SIGTERM. Listening starts before the imports, so a command
    that connects early waits for `ready` instead of falling back."""
    from pypto_tui.procgroup import PARENT_ENV, die_with_parent

    named = os.environ.get(PARENT_ENV, "")
    parent = int(named) if named.isdigit() else os.getppid()
    die_with_parent(signal.SIGTERM)  # even while the imports below run
    if os.getppid() != parent:  # the suite died before we could ask for the signal
        return 0
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    server.listen(4)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    _preload()
    if _threads() > 1:  # unsafe to fork: commands that connect get no `ready` and start their own
        return 3
    try:
        while os.getppid() == parent:
            ready, _, _ = select.select([server], [], [], 0.5)
            if not ready:
                continue
            conn, _ = server.accept()
            one = _Server(conn.fileno(), conn.fileno(), also_close=(server.fileno(),))
            try:
                gone = one.serve(parent, hello=f"ready {os.getpid()}")
            except OSError:  # the command vanished mid-write
                gone = 0
            finally:
                one.end_children(wait_s=5.0)
                conn.close()
            if gone:
                return 0
    finally:
        server.close()
    return 0


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) == 2 and args[0] == "--listen":
        return listen(args[1])
    _preload()
    if _threads() > 1:  # a thread we did not expect: forking is unsafe, the runner falls back
        return 3
    _Server(sys.stdin.fileno(), sys.stdout.fileno()).serve(os.getppid())
    return 0


if __name__ == "__main__":
    sys.exit(main())
