"""Silence a process's fds 1 and 2 while pypto works (its C++ side and helper scripts write there).

Shared by the compiler worker (worker.py) and the in-process interpreter path of exported modules
(on_cpu.py); it lives apart so that neither imports the other for it (on_cpu was importing the
worker late, which imported on_cpu: an import circle).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def silenced_fds(sink: Path) -> Iterator[None]:
    """Point fds 1 and 2 at `sink` (C++ code and child processes write there directly, so
    redirecting sys.stdout is not enough); restore them afterwards."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(sink, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (fd, *saved):
            os.close(f)
