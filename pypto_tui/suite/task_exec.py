"""One task of a suite -> one record, by running the single-task command a user would type.

`run_task(spec)` runs `python -m pypto_tui verify TASK --json ARGS...` (or `sim`) in a child
process of its own session, output to files, and turns its exit status and JSON document into a
`TaskRow`: the verdict is the command's, never re-derived, so a change to the verification
criterion reaches suites with no change here. The same function runs in the local pool's threads
and on a Dask worker (on another machine the task and kernel files are shipped as text and written
to a temporary folder when the worker cannot see them).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_tui.suite.history import TaskRow, now_iso

COMMANDS = ("verify", "sim")
STOP_GRACE_S = 10.0
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


@dataclass(frozen=True)
class ShippedFile:
    """A file the task command reads (the task, a kernel), with its text for a worker elsewhere."""

    path: str
    text: str
    sha256: str

    @classmethod
    def read(cls, path: Path) -> ShippedFile:
        text = path.read_text(encoding="utf-8")
        return cls(str(path), text, hashlib.sha256(text.encode("utf-8")).hexdigest())

    def here(self) -> bool:
        """This machine sees the same file at the same path."""
        try:
            return hashlib.sha256(Path(self.path).read_bytes()).hexdigest() == self.sha256
        except OSError:
            return False


@dataclass(frozen=True)
class TaskSpec:
    """What one worker needs: the command, the task, the per-task arguments (paths in them that
    are shipped files are replaced where the worker cannot see them) and a hard time limit."""

    command: str
    name: str
    task: ShippedFile
    args: tuple[str, ...] = ()
    files: tuple[ShippedFile, ...] = ()
    time_limit_s: float = 3600.0
    cwd: str = "."
    kb: str | None = None


class _Live:
    """The task commands running now in this process, so a stopped suite (or a Dask worker told
    to stop) can end them: SIGTERM first, which lets each stop its compiler workers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.stopping = False

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs[proc.pid] = proc
            if self.stopping:
                _terminate(proc)

    def remove(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.procs.pop(proc.pid, None)

    def stop(self, refuse_new: bool) -> int:
        with self.lock:
            self.stopping = self.stopping or refuse_new
            victims = list(self.procs.values())
        for proc in victims:
            _terminate(proc)
        return len(victims)


_LIVE = _Live()


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGTERM)


def stop_all(refuse_new: bool = True) -> int:
    """End every task command this process runs (and, with `refuse_new`, any it starts later: the
    suite is ending); how many were running. A Dask worker keeps serving other suites."""
    return _LIVE.stop(refuse_new)


def run_task(spec: TaskSpec, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one task command to its end; the TaskRow as a plain dict (it crosses to Dask). `env`:
    what the slot adds to the command's environment (its shared zygote, warm_slots.py)."""
    started = now_iso()
    with tempfile.TemporaryDirectory(prefix="pypto-tui-suite-") as tmp:
        work = Path(tmp)
        task_path, args = _materialise(spec, work)
        family, design = describe(Path(task_path), spec.kb)
        argv = [sys.executable, "-m", "pypto_tui", spec.command, task_path, "--json", *args]
        t0 = time.perf_counter()
        rc, out, err = _run(argv, work, spec.cwd if Path(spec.cwd).is_dir() else tmp, spec.time_limit_s, env or {})
        wall = time.perf_counter() - t0
    row = classify(spec, rc, out, err)
    row.family, row.design = family, {**design, **row.design}
    row.wall_s, row.started_at, row.finished_at, row.worker = round(wall, 3), started, now_iso(), socket.gethostname()
    return row.to_dict()


def _materialise(spec: TaskSpec, work: Path) -> tuple[str, list[str]]:
    """The task path and arguments as this machine sees them: a shipped file that is not here (or
    differs) is written under `work` and its path in the arguments replaced."""
    swap: dict[str, str] = {}
    for f in (spec.task, *spec.files):
        if f.here():
            continue
        local = work / "files" / str(len(swap)) / Path(f.path).name
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_text(f.text, encoding="utf-8")
        swap[f.path] = str(local)
    return swap.get(spec.task.path, spec.task.path), [swap.get(a, a) for a in spec.args]


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("PYPTO_TUI_DEBUG", None)
    return env


def _run(argv: list[str], work: Path, cwd: str, limit_s: float,
         env: dict[str, str]) -> tuple[int | None, str, str]:
    """(exit status or None at the time limit, stdout, stderr). The child leads a new session and
    dies with us (leash.py); at the limit it gets SIGTERM (it stops its compiler workers), then
    its whole group SIGKILL."""
    from pypto_tui.procgroup import kill_group

    out_path, err_path = work / "stdout.json", work / "stderr.log"
    leash = [sys.executable, "-m", "pypto_tui.suite.leash", str(os.getpid()), "--", *argv]
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(leash, cwd=cwd, env={**child_env(), **env}, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, start_new_session=True)
        _LIVE.add(proc)
        rc: int | None
        try:
            rc = proc.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            rc = None
            with contextlib.suppress(OSError):
                proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=STOP_GRACE_S)
        finally:
            kill_group(proc)
            _LIVE.remove(proc)
    return rc, _read(out_path), _read(err_path)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def classify(spec: TaskSpec, rc: int | None, stdout: str, stderr: str) -> TaskRow:
    """The row for one finished command: exit 0 pass; exit 1 fail (`unsupported` when verify says
    the task is not supported); exit 2 error (bad input, its one-line message); the time limit
    `timeout`; any other ending (a crash, a signal) `error` with the end of stderr."""
    doc: dict[str, Any] = {}
    with contextlib.suppress(ValueError):
        loaded = json.loads(stdout) if stdout.strip() else {}
        doc = loaded if isinstance(loaded, dict) else {}
    if rc is None:
        verdict = "timeout"
    elif rc == 0:
        verdict = "pass"
    elif rc == 1 and doc:
        verdict = "unsupported" if spec.command == "verify" and doc.get("supported") is False else "fail"
    else:
        verdict = "error"
    errors = _errors(doc, stderr, verdict, rc, spec.time_limit_s)
    return TaskRow(name=spec.name, path=spec.task.path, verdict=verdict, exit_code=rc, errors=errors,
                   peak_rss_mb=_peak(doc), design=_design_from(doc), record=doc)


def _errors(doc: dict[str, Any], stderr: str, verdict: str, rc: int | None, limit_s: float) -> list[str]:
    if verdict == "pass":
        return []
    found: list[str] = []
    if verdict == "timeout":
        found.append(f"stopped at the suite's time limit of {limit_s:g} s")
    result: dict[str, Any] = doc["result"] if isinstance(doc.get("result"), dict) else {}
    for value in (doc.get("error"), doc.get("reason"), result.get("reason"), result.get("error")):
        if isinstance(value, str) and value and value not in found:
            found.append(value)
    if doc.get("first_failing_pass"):
        found.append(f"first failing pass: {doc['first_failing_pass']}")
    if doc.get("missing_passes"):
        found.append("no row for: " + ", ".join(map(str, doc["missing_passes"])))
    if not found or verdict == "error":
        lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
        said = [ln for ln in lines if ln.startswith("pypto-tui: error")] or lines[-3:]
        found += said or [f"the command ended with status {rc} and printed nothing"]
    return found


def _design_from(doc: dict[str, Any]) -> dict[str, Any]:
    """The design the command used, from its own record (verify and sim both name tile and loop)."""
    out: dict[str, Any] = {}
    for key in ("tile", "loop_count", "kernel", "design_tile", "design_loop_count"):
        if key in doc:
            out[key] = doc[key]
    return out


def _peak(doc: dict[str, Any]) -> float | None:
    result: dict[str, Any] = doc["result"] if isinstance(doc.get("result"), dict) else {}
    for value in (doc.get("peak_rss_mb"), result.get("peak_rss_mb")):
        if isinstance(value, int | float):
            return float(value)
    return None


def describe(task: Path, kb: str | None) -> tuple[str | None, dict[str, Any]]:
    """The task's operator family and the design's pattern, read statically (no code runs); a
    task the reader cannot read gets (None, {}) and its command says why."""
    try:
        from pypto_tui.design import Design, Pipeline
        from pypto_tui.kb import get_kb

        p = Pipeline(get_kb(kb), Design(task=str(task)))
        c = p.contract()
        pattern = p.pattern()
        return c.family, {"op": c.op, "pattern": pattern.id if pattern is not None else None}
    except Exception:  # a broken task is the command's to report, in its own words
        return None, {}


def crashed_row(spec: TaskSpec, why: str) -> dict[str, Any]:
    """The record of a task whose runner (not its command) failed: a lost Dask worker, a full disk."""
    now = now_iso()
    return TaskRow(name=spec.name, path=spec.task.path, verdict="error", errors=[f"the task did not run to its "
                   f"end: {why}"], started_at=now, finished_at=now).to_dict()
