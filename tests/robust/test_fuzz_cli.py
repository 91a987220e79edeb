"""Issue 15's fuzz, in CI: argument vectors drawn by hypothesis from the same grammar as
benchmarks/fuzz_cli.py (which runs 10,000 of them); every run must keep the CLI's promises:
exit 0/1/2, no traceback, bad input as one line, `{"error": ...}` with --json, and no hang."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import hostile
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from pypto_tui.cli import app

T = TypeVar("T")
HANG_SECONDS = 30
BUDGET_SECONDS = 50
"""The whole fuzz's wall-clock budget (it takes ~6 s for its 400 fixed vectors): a run that gets
slower than this fails, with the time, instead of making every test run slower unnoticed."""


class DataChooser:
    """hostile.Chooser over hypothesis's `data`: draws shrink toward the first option."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(list(options)))

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def coin(self, p: float) -> bool:
        return self.data.draw(st.integers(0, 99)) < int(p * 100)


class Hang(Exception):
    pass


@pytest.fixture(scope="module")
def fuzz_started() -> float:
    return time.monotonic()


@pytest.fixture(scope="module")
def fuzz_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hostile.Sandbox]:
    sb = hostile.build_sandbox(tmp_path_factory.mktemp("fuzz"))
    yield sb
    os.chmod(sb.out / "ro", 0o755)


def _alarm(signum: int, frame: object) -> None:
    raise Hang(f"no answer within {HANG_SECONDS} s")


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_fuzzed_argv_keeps_every_promise(data: st.DataObject, fuzz_box: hostile.Sandbox, fuzz_started: float,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    spent = time.monotonic() - fuzz_started
    assert spent < BUDGET_SECONDS, f"the CLI fuzz took over {BUDGET_SECONDS} s ({spent:.0f} s): a command got slow"
    argv = hostile.draw_argv(DataChooser(data), fuzz_box)
    monkeypatch.chdir(fuzz_box.root)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(HANG_SECONDS)
    try:
        result = CliRunner().invoke(app, argv, env={"NO_COLOR": "1", "COLUMNS": "100"})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    assert escaped is None, f"{argv!r} raised {escaped!r}"
    verdict = hostile.judge(argv, result.exit_code, result.stdout, result.stderr)
    assert verdict.problems == [], verdict.to_dict()


def test_judge_catches_what_it_must() -> None:
    """The judge itself: a traceback, a multi-line error, exit 2 with --json and no document."""
    tb = "Traceback (most recent call last):\n  File ...\nValueError: x\n"
    assert hostile.judge(["tile"], 1, "", tb).problems == ["traceback"]
    assert hostile.judge(["tile"], 2, "", "Usage: ...\nTry ...\n\nError: x\n").problems == ["multi-line-error"]
    assert hostile.judge(["tile", "--json"], 2, "", "pypto-tui: error: x\n").problems == ["no-json-error"]
    assert hostile.judge(["tile"], 3, "", "").problems == ["bad-exit-code"]
    assert hostile.judge(["tile"], 2, "", "pypto-tui: note: n\npypto-tui: error: x\n").problems == []
    assert hostile.judge(["tile"], None, "", "", hung=True).problems == ["hang"]
    # --json as an option's value or a file name after `--` asks for no JSON
    assert hostile.judge(["loop", "--shape", "--json"], 2, "", "pypto-tui: error: x\n").problems == []
    assert hostile.judge(["lint", "--", "--json"], 2, "", "pypto-tui: error: x\n").problems == []


def test_sandbox_never_points_outside_itself(fuzz_box: hostile.Sandbox) -> None:
    root = fuzz_box.root
    for target in fuzz_box.output_targets():
        assert Path(target).is_relative_to(root), target
