"""CI cannot go green without the compiler: under CI=true a compiler-backed test that cannot run
fails the run (tests/conftest.py), while an ordinary skip stays a skip and a developer's machine
without the [sim] extra still skips."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "ci_gate" / "skips.py"


pytestmark = pytest.mark.slow  # three pytest processes


def _run(ci: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "0", "-rA", "-p", "no:randomly", str(SAMPLE)],
                       capture_output=True, text=True, env=env, cwd=SAMPLE.parents[3], timeout=120)
    return r.stdout


@pytest.mark.parametrize("ci", [None, "false"])
def test_outside_ci_a_missing_compiler_skips(ci: str | None) -> None:
    out = _run(ci)
    assert "3 skipped" in out and "failed" not in out


def test_in_ci_a_compiler_backed_skip_fails_the_run() -> None:
    out = _run("true")
    # a skip in the test body fails the test; a skipif fails its setup (pytest counts an error)
    assert "1 failed, 1 skipped, 1 error" in out
    assert "FAILED tests/fixtures/ci_gate/skips.py::test_marked" in out
    assert "ERROR tests/fixtures/ci_gate/skips.py::test_torch_skipif" in out
    assert "could not run" in out
