"""Issue 15's regression tests: hostile inputs are generated here (see hostile.py), never committed."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # `import hostile` (shared with benchmarks/fuzz_cli.py)

import hostile  # noqa: E402
from support import PYPTO_TUI  # noqa: E402


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> hostile.Sandbox:
    return hostile.build_sandbox(tmp_path_factory.mktemp("sandbox"))


@pytest.fixture
def run_cli(tmp_path: Path):
    """Run the installed `pypto-tui` in a subprocess (a segfault or a hang must not take the test
    run down with it): returns (rc, stdout, stderr)."""
    import subprocess

    def run(*args: str, timeout: float = 60, cwd: Path | None = None, env: dict[str, str] | None = None):
        full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
        proc = subprocess.run([PYPTO_TUI, *args], capture_output=True, text=True, timeout=timeout,
                              cwd=cwd or tmp_path, env=full_env, stdin=subprocess.DEVNULL)
        return proc.returncode, proc.stdout, proc.stderr

    return run

