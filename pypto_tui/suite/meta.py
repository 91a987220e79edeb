"""What a suite run records about itself, so two runs can be told apart later: this tool's
version and commit, the compiler's version, the pack, and the verification criterion."""

from __future__ import annotations

import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

_CHECKOUT = Path(__file__).resolve().parents[2]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def tool_commit() -> str | None:
    """The git commit of this checkout (`+dirty` when files differ from it); None for an installed wheel."""
    if not (_CHECKOUT / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(_CHECKOUT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(_CHECKOUT), "status", "--porcelain", "--untracked-files=no",
                                "--", "pypto_tui", "knowledge"], capture_output=True, text=True, timeout=20,
                               check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def run_meta(kb: str | None, task_args: list[str]) -> dict[str, Any]:
    """The run's columns in the history (history.RUNS). The criterion is the one asked for with
    --criterion; else it is filled in from the first record that names it (the pack's default)."""
    from pypto_tui.kb import get_kb

    pack = get_kb(kb)
    criterion = None
    if "--criterion" in task_args:
        i = task_args.index("--criterion")
        criterion = task_args[i + 1] if i + 1 < len(task_args) else None
    return {"tool_version": _version("pypto-tui"), "tool_commit": tool_commit(), "pypto_version": _version("pypto"),
            "pack_name": pack.name, "pack_version": pack.version, "criterion": criterion}
