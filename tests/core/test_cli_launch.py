"""Starting `pypto-tui` without a terminal, and `--version` (issue 25, items 9 and 11).

Run as real processes with pipes (and a pseudo-terminal for the half-terminal cases): a script or
a pipe must get the help or one line and an exit, never the full-screen app's escape codes and a
process waiting for keys.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "tests" / "fixtures" / "tasks" / "elu.py"
CLI = [sys.executable, "-m", "pypto_tui"]


def _run(args: list[str], *, stdin: int | None = subprocess.PIPE, stdout: int | None = subprocess.PIPE,
         ) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*CLI, *args], stdin=stdin, stdout=stdout, stderr=subprocess.PIPE, timeout=60,
                          check=False, env={**os.environ, "PYPTO_TUI_DEBUG": ""})


def test_no_arguments_in_a_pipe_prints_the_help_and_exits() -> None:
    r = _run([])
    assert r.returncode == 2
    assert r.stdout.startswith(b"Usage: pypto-tui") and b"verify" in r.stdout
    assert b"\x1b" not in r.stdout + r.stderr
    assert r.stderr.count(b"\n") == 1 and b"needs a terminal" in r.stderr


def test_ui_in_a_pipe_is_one_line_and_exit_2() -> None:
    r = _run(["ui", str(TASK)])
    assert (r.returncode, r.stdout) == (2, b"")
    assert r.stderr.count(b"\n") == 1 and r.stderr.startswith(b"pypto-tui: error: the app needs a terminal")


@pytest.mark.parametrize("which", ["stdin", "stdout"])
def test_half_a_terminal_is_not_enough(which: str) -> None:
    """Keys from a pipe or a picture into a pipe: the app could not work either way."""
    leader, follower = pty.openpty()
    try:
        if which == "stdin":  # stdout is a terminal, stdin a pipe (`echo | pypto-tui`)
            r = _run([], stdout=follower)
        else:  # stdin is a terminal, stdout a pipe (`pypto-tui | cat`)
            r = _run([], stdin=follower)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.returncode == 2 and b"needs a terminal" in r.stderr


def test_a_bad_input_is_still_named_before_the_terminal() -> None:
    """What is wrong with the command line comes first: the missing file, not the missing terminal."""
    r = _run(["ui", str(ROOT / "no_such_task.py")])
    assert r.returncode == 2 and b"no_such_task.py" in r.stderr and b"terminal" not in r.stderr


def test_version_matches_the_package_metadata() -> None:
    want = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    r = _run(["--version"])
    assert (r.returncode, r.stdout.decode(), r.stderr) == (0, f"pypto-tui {want}\n", b"")


@pytest.mark.parametrize("args", [["kb", "list"], ["tile", "--shape", "16,256,256", "--reduce-dim", "1"],
                                  ["loop", "--shape", "16384,1024", "--tile", "128,128", "--matmul"]])
def test_piped_tables_carry_no_trailing_spaces(args: list[str]) -> None:
    """Issue 25 (11): a piped table's lines were padded with spaces to the widest row."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = subprocess.run([*CLI, *args], capture_output=True, timeout=120, check=False, env=env)
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.decode().splitlines()
    assert len(lines) > 3 and not [line for line in lines if line != line.rstrip()]
    assert r.stdout.endswith(b"\n")
