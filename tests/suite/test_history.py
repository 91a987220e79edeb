"""The run history: one row per task per run, committed at once, and safe with several writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest
from suite_helpers import add_run, row

from pypto_tui.errors import InputError
from pypto_tui.suite.history import History, TaskRow


def test_a_task_is_recorded_once_per_run(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    run_id = add_run(db, [row("a.py"), row("b.py", "fail")])
    with History.open(db) as h:
        assert not h.record_task(run_id, row("a.py", "fail"))  # a second row for a.py is refused
        assert [(r.name, r.verdict) for r in h.tasks(run_id)] == [("a.py", "pass"), ("b.py", "fail")]
        assert h.counts(run_id) == {"pass": 1, "fail": 1}
        assert h.tasks(run_id)[1].errors == ["b.py failed"]
        assert h.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_runs_are_named_by_number_or_from_the_last(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    first, second = add_run(db, [row("a.py")]), add_run(db, [row("a.py", "fail")])
    with History.open(db) as h:
        assert h.resolve("last").id == second
        assert h.resolve("last-1").id == first
        assert h.resolve(str(first)).id == first
        for bad, message in (("last-5", "holds only 2 run"), ("9", "run 9 is not in"), ("x", "use a run number")):
            with pytest.raises(InputError, match=message):
                h.resolve(bad)


def test_the_history_knows_each_tasks_last_peak_and_time(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    add_run(db, [row("a.py", wall_s=5.0)])
    add_run(db, [row("a.py", wall_s=7.0)])
    add_run(db, [row("a.py", wall_s=99.0)], command="sim")
    with History.open(db) as h:
        assert h.hints("verify", ["a.py", "new.py"]) == {"a.py": (350.0, 7.0)}


def test_a_file_that_is_not_a_history_is_refused(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a pypto-tui run history"):
        History.open(junk)
    with pytest.raises(InputError, match="not a file"):
        History.open(tmp_path)


def _writer(db: str, worker: int, tasks: int) -> None:
    with History.open(Path(db)) as h:
        run_id = h.start_run(command="verify", folder=f"/f{worker}", total=tasks, task_args=[], scheduler="local",
                             workers=1, meta={})
        for i in range(tasks):
            assert h.record_task(run_id, TaskRow(name=f"t{i}.py", path=f"/f{worker}/t{i}.py", verdict="pass",
                                                 wall_s=float(i), record={"worker": worker, "i": i}))
            h.hints("verify", [f"t{i}.py"])  # a read between the writes, as a running suite does
        h.finish_run(run_id, "finished", 1.0)


def test_concurrent_writers_do_not_corrupt_the_history(tmp_path: Path) -> None:
    db = tmp_path / "runs.sqlite"
    History.open(db).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(db), w, 60)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'finished'").fetchone()[0] == 4
    per_run = conn.execute("SELECT run_id, COUNT(*), COUNT(DISTINCT name) FROM tasks GROUP BY run_id").fetchall()
    assert sorted(n for _, n, _ in per_run) == [60] * 4
    assert all(n == distinct for _, n, distinct in per_run)
