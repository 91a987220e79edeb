"""`verify DIR --resume` without the compiler: a stub pool stands in for the workers, so the fast run
checks what resuming means (only the unfinished tasks run, the finished rows stay as they were, the
run is the same one and ends finished); the kill -9 flow through the real compiler is in test_suite_sim."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from suite_helpers import row
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.suite import suite_run
from pypto_tui.suite.history import History
from pypto_tui.suite.suite_run import SuiteOptions, run_suite

SMALL = Path(__file__).parent / "fixtures" / "suite_small"
TASKS = ["relu_tiny.py", "scale_tiny.py", "sort_fails.py", "sum_rows_tiny.py"]


class Stopped(Exception):
    """The stub pool's Ctrl+C: the suite ends with some tasks recorded and the rest never run."""


class StubPool:
    """Runs nothing: records each task it is given as `verdicts` says, and stops after `stop_after`."""

    name = "local"
    workers = 1

    def __init__(self, verdicts: dict[str, str], stop_after: int | None = None) -> None:
        self.verdicts = verdicts
        self.stop_after = stop_after
        self.given: list[str] = []

    def describe(self) -> str:
        return "stub pool"

    def run(self, specs: Any, needs_mb: Any, on_done: Callable[[dict[str, Any]], None]) -> None:
        for spec in specs:
            if self.stop_after is not None and len(self.given) == self.stop_after:
                raise Stopped
            self.given.append(spec.name)
            on_done(row(spec.name, self.verdicts[spec.name]).to_dict())


def recorded(db: Path) -> dict[str, tuple[str, str]]:
    with History.open(db) as h:
        return {r.name: (r.verdict, str(r.finished_at)) for r in h.tasks(1)}


def test_resume_runs_only_the_unfinished_tasks_of_the_same_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    db = tmp_path / "runs.sqlite"
    verdicts = {name: "unsupported" if name == "sort_fails.py" else "pass" for name in TASKS}
    first = StubPool(verdicts, stop_after=2)
    monkeypatch.setattr(suite_run, "_pool", lambda opts, needs: first)
    with pytest.raises(Stopped):
        run_suite(SuiteOptions(command="verify", folder=SMALL, db=db))
    before = recorded(db)
    assert sorted(before) == sorted(first.given) and len(before) == 2
    with History.open(db) as h:
        assert h.run(1).status == "interrupted"

    second = StubPool(verdicts)
    monkeypatch.setattr(suite_run, "_pool", lambda opts, needs: second)
    r = CliRunner().invoke(app, ["verify", str(SMALL), "--db", str(db), "--resume", "--json"], env={"NO_COLOR": "1"})
    assert r.exit_code == 1, r.output  # sort_fails.py is not a pass
    doc = json.loads(r.stdout)
    assert sorted(second.given) == sorted(set(TASKS) - set(first.given))  # nothing finished runs again
    assert doc["resumed"] == [n for n in TASKS if n in first.given]
    assert (doc["run"]["id"], doc["run"]["status"]) == (1, "finished")
    assert [t["name"] for t in doc["tasks"]] == TASKS and doc["totals"]["resumed"] == 2
    after = recorded(db)
    assert {n: after[n] for n in before} == before  # the finished rows kept, not rewritten
    assert {n: v for n, (v, _) in after.items()} == verdicts

    again = CliRunner().invoke(app, ["verify", str(SMALL), "--db", str(db), "--resume"], env={"NO_COLOR": "1"})
    assert again.exit_code == 2 and "holds no unfinished `verify` run" in again.stderr
    assert len(second.given) == 2  # the refused resume ran nothing
