"""Trace a task file in the task runner, and cache what it gives.

The task's code runs only in `runner.py`, started by file path under the chosen interpreter in a new
session (procgroup.run_in_group: stopped with everything it started at the timeout), with its address
space capped. Nothing of torch is imported here. A finished trace (a graph, or torch's refusal of the
model) is cached under the sha256 of the task file's bytes, the torch version and the pack, in the
user's cache folder (`$PYPTO_TUI_CACHE_DIR` or the platform's, `traces/`); a timeout says something
about this machine at that moment, not about the model, and is never cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypto_tui.contract.graph import OpGraph

RUNNER = Path(__file__).resolve().parent / "runner.py"
TRACE_FORMAT = 6
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_MEMORY_MB = 12288


@dataclass(frozen=True)
class Trace:
    """What the tracer gave: `status` ok (then `data` is the runner's graph description), error (the
    model did not export: `message` says why), timeout or no-torch; `cached` when read from the cache."""

    status: str
    message: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    cached: bool = False
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def torch_version(python: str) -> str | None:
    """The torch version `python` would import (read from its package metadata, torch not imported)."""
    code = ("import importlib.metadata as m\ntry:\n    print(m.version('torch'))\nexcept Exception:\n"
            "    print('')")
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        import importlib.metadata as metadata

        try:
            return metadata.version("torch")
        except metadata.PackageNotFoundError:
            return None
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def trace_key(task_bytes: bytes, torch: str, pack: str) -> str:
    """The cache key of a trace: the task file's content, the torch version, the pack and the format."""
    blob = json.dumps({"format": TRACE_FORMAT, "task": hashlib.sha256(task_bytes).hexdigest(), "torch": torch,
                       "pack": pack}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


class _TraceCache:
    """Traces on disk, `<root>/<key[:2]>/<key>.json` (the layout of the compiler's result cache, so one
    folder of the user's cache holds both), each written atomically."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        from pypto_tui.fileio import write_atomic

        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, json.dumps(value, sort_keys=True), force=True)


def _cache() -> _TraceCache:
    from pypto_tui.fileio import cache_root

    return _TraceCache(cache_root() / "traces")


def trace_task(task: str | os.PathLike[str], *, pack: str = "", timeout: float = DEFAULT_TIMEOUT_S,
               memory_mb: int = DEFAULT_MEMORY_MB, python: str | None = None, use_cache: bool = True,
               announce: Callable[[str], None] | None = None) -> Trace:
    """Export the task's `Model(*get_init_inputs())` in eval mode on `get_inputs()` and decompose it to core
    ATen, in the task runner; the cached answer when the same file was traced with the same torch and pack.
    `announce` is told, before the task's code runs, that it will (the CLI's note on stderr)."""
    path = Path(task)
    python = python or sys.executable
    content = path.read_bytes()
    version = torch_version(python)
    if version is None:
        return Trace("no-torch", f"torch is not installed for {python}: tracing a model needs it "
                                 "(pip install torch, the CPU build)")
    key = trace_key(content, version, pack)
    cache = _cache() if use_cache else None
    if cache is not None:
        hit = cache.get(key)
        if hit is not None and hit.get("status") in ("ok", "error"):
            return Trace(hit["status"], hit.get("message", ""), hit if hit["status"] == "ok" else {}, cached=True)
    if announce is not None:
        announce(f"tracing executes the code in {path} (a task file is code: trace only files you trust), in a "
                 f"subprocess of its own process group, stopped after {timeout:g} s")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pypto-tui-trace-") as tmp:
        wd = Path(tmp)
        (wd / "job.json").write_text(json.dumps({"task_path": str(path.resolve()), "memory_mb": memory_mb}))
        from pypto_tui.procgroup import run_in_group

        env = dict(os.environ)
        env.setdefault("OMP_NUM_THREADS", "1")
        try:
            proc = run_in_group([python, str(RUNNER), str(wd)], cwd=wd, env=env, timeout=timeout)
        except OSError as exc:
            return Trace("error", f"cannot start {python}: {exc.strerror}")
        seconds = time.monotonic() - t0
        if proc.timed_out:
            return Trace("timeout", f"tracing took more than {timeout:g} s (stopped); raise --timeout",
                         seconds=seconds)
        try:
            result = json.loads((wd / "result.json").read_text())
        except (OSError, ValueError):
            tail = proc.output.strip().splitlines()
            return Trace("error", f"the tracer ended without a result (exit {proc.returncode})"
                         + (f": {tail[-1][:200]}" if tail else ""), seconds=seconds)
    status = str(result.get("status", "error"))
    if status == "no-torch":
        return Trace("no-torch", str(result.get("message", "")), seconds=seconds)
    if cache is not None and (status == "ok" or result.get("stage") in ("export", "decompose")):
        cache.put(key, result)
    return Trace(status, str(result.get("message", "")), result if status == "ok" else {}, seconds=seconds)


def pack_id(kb: Any) -> str:
    """The pack's identity for the trace cache (its name and version)."""
    return f"{getattr(kb, 'name', '')}@{getattr(kb, 'version', '')}"


def traced_graph(task: str | os.PathLike[str], kb: Any, *, timeout: float = DEFAULT_TIMEOUT_S,
                 memory_mb: int | None = None, announce: Callable[[str], None] | None = None,
                 use_cache: bool = True) -> OpGraph:
    """The task's traced OpGraph (`contract.aten.graph_from_trace` of the runner's JSON); InputError (one
    line) when the model cannot be traced. The design pipeline's step 1 calls this when the design asks
    for the traced front end (`Design.front_end`)."""
    from pypto_tui.contract.aten import graph_from_trace
    from pypto_tui.errors import InputError

    t = trace_task(task, pack=pack_id(kb), timeout=timeout, memory_mb=memory_mb or DEFAULT_MEMORY_MB,
                   announce=announce, use_cache=use_cache)
    if not t.ok:
        raise InputError(f"the traced front end could not read {task}: {t.message or t.status}")
    return graph_from_trace(t.data)
