"""Results on disk, so asking the same question twice costs nothing.

A SIM compile is deterministic: the research note found byte-identical swim files across
processes and input data. So a result is fully determined by the kernel source, the job's
inputs, the pypto version and the job kind, and it can be stored under the sha256 of exactly
those. A second identical request is a file read and spawns no process.

Only answers the compiler gave are stored (a measurement, a compile error, a verdict). A
timeout or a crashed worker says something about this machine at that moment, not about the
kernel, so it is never cached.

The cache root is `$PYPTO_TUI_CACHE_DIR` if set, else the platform's user cache directory
(`~/.cache/pypto-tui` on Linux). Results live in `results/`, the calculator library in
`calculator/` (see `shim`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypto_tui import fileio

ENV_CACHE_DIR = "PYPTO_TUI_CACHE_DIR"
APP_NAME = "pypto-tui"
CACHE_FORMAT = 1


def cache_root() -> Path:
    """`$PYPTO_TUI_CACHE_DIR`, else the user cache dir for pypto-tui (fileio.cache_root: one answer for
    this cache and the tracer's, which sits below the design pipeline and cannot import this layer)."""
    return fileio.cache_root()


def cache_key(material: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of `material` (sorted keys, no whitespace)."""
    blob = json.dumps(
        {"format": CACHE_FORMAT, **material}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ResultCache:
    """A folder of `<sha256>.json` files. Writes are atomic (temp file + rename), so parallel
    workers and an interrupted run never leave a half-written entry behind."""

    root: Path

    @classmethod
    def default(cls) -> ResultCache:
        return cls(cache_root() / "results")

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            with self.path(key).open(encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def put(self, key: str, value: Mapping[str, Any]) -> None:
        target = self.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(dict(value), fh, sort_keys=True)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def clear(self) -> int:
        """Delete every entry; returns how many were removed."""
        n = 0
        for f in self.root.glob("*/*.json"):
            with contextlib.suppress(OSError):
                f.unlink()
                n += 1
        return n
