"""Rows and runs for the history tests, written through the History API itself."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.suite.history import History, TaskRow


def add_run(db: Path, rows: list[TaskRow], command: str = "verify", folder: str = "/tasks", status: str = "finished",
            criterion: str | None = "kernelbench", task_args: list[str] | None = None) -> int:
    with History.open(db) as h:
        run_id = h.start_run(command=command, folder=folder, total=len(rows), task_args=task_args or [],
                             scheduler="local",
                             workers=2, meta={"tool_version": "0.1.0", "pack_name": "default", "pack_version": "1.0",
                                              "criterion": criterion})
        for r in rows:
            assert h.record_task(run_id, r)
        h.finish_run(run_id, status, sum(r.wall_s or 0 for r in rows))
    return run_id


def row(name: str, verdict: str = "pass", wall_s: float = 10.0, family: str = "elementwise",
        errors: list[str] | None = None) -> TaskRow:
    return TaskRow(name=name, path=f"/tasks/{name}", verdict=verdict, exit_code=0 if verdict == "pass" else 1,
                   errors=errors or ([] if verdict == "pass" else [f"{name} failed"]), wall_s=wall_s,
                   peak_rss_mb=350.0, family=family, design={"pattern": "A", "tile": [8, 512]},
                   record={"passed": verdict == "pass"})
