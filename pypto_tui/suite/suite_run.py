"""A suite from start to end: discover the tasks, open (or resume) the run in the history, order
and size the work, run it on the chosen pool, record each task the moment it ends.

Longest first: when the history knows how long each task took, the longest start first, so the
last minutes are not one long task running alone while the other workers idle. Tasks never run
before keep the folder's order, ahead of the known ones (they may be the long ones).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pypto_tui.errors import InputError
from pypto_tui.suite.capacity import local_capacity, task_need_mb
from pypto_tui.suite.discover import kernel_for, suite_tasks
from pypto_tui.suite.history import History, RunInfo, TaskRow
from pypto_tui.suite.task_exec import COMMANDS, ShippedFile, TaskSpec

DEFAULT_TIME_LIMIT_S = 3600.0


class Pool(Protocol):
    name: str

    @property
    def workers(self) -> int: ...

    def run(self, specs: Any, needs_mb: Any, on_done: Callable[[dict[str, Any]], None]) -> None: ...


@dataclass
class SuiteOptions:
    command: str
    folder: Path
    task_args: list[str] = field(default_factory=list)
    kernels: Path | None = None
    workers: int | None = None
    scheduler: str | None = None
    db: Path | None = None
    resume: bool = False
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    kb: str | None = None


@dataclass
class SuiteEvent:
    """What the display is told: the start (`row` None) and each finished task."""

    total: int
    done: int
    passed: int
    failed: int
    row: TaskRow | None = None
    note: str = ""


@dataclass
class SuiteResult:
    run: RunInfo
    db_path: Path
    rows: list[TaskRow]
    resumed: list[str]
    wall_s: float
    pool: str

    @property
    def totals(self) -> dict[str, Any]:
        by: dict[str, int] = {}
        for r in self.rows:
            by[r.verdict] = by.get(r.verdict, 0) + 1
        passed = by.get("pass", 0)
        return {"tasks": len(self.rows), "passed": passed, "failed": len(self.rows) - passed, "by_verdict": by,
                "resumed": len(self.resumed), "wall_s": round(self.wall_s, 3)}

    @property
    def failed(self) -> bool:
        return any(not r.passed for r in self.rows) or self.run.status != "finished"


def run_suite(opts: SuiteOptions, notify: Callable[[SuiteEvent], None] | None = None) -> SuiteResult:
    if opts.command not in COMMANDS:
        raise InputError(f"a suite runs one of {', '.join(COMMANDS)}, not {opts.command!r}")
    tasks = suite_tasks(opts.folder)
    folder = str(opts.folder.resolve())
    with History.open(opts.db) as history:
        run, task_args, done_names = _open_run(history, opts, folder, len(tasks))
        todo = [t for t in tasks if t.name not in done_names]
        specs = [_spec(opts, t.resolve(), task_args) for t in todo]
        hints = history.hints(opts.command, [t.name for t in todo])
        specs = _longest_first(specs, hints)
        needs = [task_need_mb(hints.get(s.name, (None, None))[0]) for s in specs]
        pool = _pool(opts, needs)
        if run.id == 0:
            from pypto_tui.suite.meta import run_meta

            run_id = history.start_run(command=opts.command, folder=folder, total=len(tasks), task_args=task_args,
                                       scheduler=opts.scheduler or "local", workers=pool.workers,
                                       meta=run_meta(opts.kb, task_args))
        else:
            run_id = run.id
            history.reopen_run(run_id, scheduler=opts.scheduler or "local", workers=pool.workers)
        counts = history.counts(run_id)
        state = SuiteEvent(total=len(tasks), done=sum(counts.values()), passed=counts.get("pass", 0),
                           failed=sum(counts.values()) - counts.get("pass", 0), note=_describe(pool))
        if notify:
            notify(state)
        t0 = time.perf_counter()
        status = "interrupted"

        def record(d: dict[str, Any]) -> None:
            row = TaskRow.from_dict(d)
            if not history.record_task(run_id, row):
                return
            if row.record.get("criterion"):
                history.set_criterion(run_id, str(row.record["criterion"]))
            state.done += 1
            state.passed += row.passed
            state.failed += not row.passed
            state.row = row
            if notify:
                notify(state)

        try:
            if specs:
                pool.run(specs, needs, record)
            status = "finished" if len(history.finished_names(run_id)) == len(tasks) else "interrupted"
        finally:
            history.finish_run(run_id, status, time.perf_counter() - t0)
        order = {t.name: i for i, t in enumerate(tasks)}
        rows = sorted(history.tasks(run_id), key=lambda r: order.get(r.name, len(order)))
        return SuiteResult(history.run(run_id), history.path, rows, sorted(done_names, key=lambda n: order.get(n, 0)),
                           time.perf_counter() - t0, pool.name)


def check_options(opts: SuiteOptions) -> None:
    """Refuse options that cannot apply before anything runs or is announced (the CLI prints its
    note about executing task code only after this)."""
    if opts.scheduler and opts.workers is not None:
        raise InputError("--workers sizes the local pool; with --scheduler the cluster's workers decide "
                         "(start them with `dask worker ADDRESS --nthreads N`)")
    if opts.resume:
        with History.open(opts.db) as history:
            _open_run(history, opts, str(opts.folder.resolve()), 0)


def _open_run(history: History, opts: SuiteOptions, folder: str, total: int) -> tuple[RunInfo, list[str], set[str]]:
    """The run to write to: a new one (id 0 until it is started), or with --resume the latest
    unfinished run of this command over this folder, with its own task arguments."""
    if not opts.resume:
        return _blank_run(opts, folder, total), list(opts.task_args), set()
    run = history.resumable(opts.command, folder)
    if run is None:
        raise InputError(f"--resume: {history.path} holds no unfinished `{opts.command}` run over {folder}; run "
                         f"without --resume to start one")
    if run.live_status() == "running" and run.host == socket.gethostname():
        raise InputError(f"--resume: run {run.id} is still running (process {run.pid}); wait for it or stop it")
    if list(opts.task_args) != list(run.task_args):
        raise InputError(f"--resume: run {run.id} was started with the task options {run.task_args or '(none)'}; "
                         f"give the same ones (now {opts.task_args or '(none)'})")
    return run, list(run.task_args), history.finished_names(run.id)


def _blank_run(opts: SuiteOptions, folder: str, total: int) -> RunInfo:
    return RunInfo(id=0, command=opts.command, folder=folder, started_at="", finished_at=None, status="new",
                   total=total, task_args=list(opts.task_args), scheduler=opts.scheduler or "local", workers=None,
                   host=None, pid=None, tool_version=None, tool_commit=None, pypto_version=None, pack_name=None,
                   pack_version=None, criterion=None, wall_s=None)


def _without_kernel_folder(task_args: list[str]) -> list[str]:
    """The run's options minus `--kernel FOLDER` (each task gets its own file from that folder)."""
    out: list[str] = []
    skip = False
    for a in task_args:
        if skip:
            skip = False
        elif a == "--kernel":
            skip = True
        else:
            out.append(a)
    return out


def _spec(opts: SuiteOptions, task: Path, task_args: list[str]) -> TaskSpec:
    args = _without_kernel_folder(task_args)
    files: tuple[ShippedFile, ...] = ()
    if opts.kernels is not None:
        kernel = kernel_for(task, opts.kernels)
        args += ["--kernel", str(kernel)]
        if kernel.is_file():
            files = (ShippedFile.read(kernel),)
    return TaskSpec(command=opts.command, name=task.name, task=ShippedFile.read(task), args=tuple(args), files=files,
                    time_limit_s=opts.time_limit_s, cwd=str(Path.cwd()), kb=opts.kb)


def _longest_first(specs: list[TaskSpec], hints: dict[str, tuple[float | None, float | None]]) -> list[TaskSpec]:
    unknown = [s for s in specs if hints.get(s.name, (None, None))[1] is None]
    known = [s for s in specs if hints.get(s.name, (None, None))[1] is not None]
    known.sort(key=lambda s: -(hints[s.name][1] or 0.0))
    return unknown + known


def _pool(opts: SuiteOptions, needs: list[float]) -> Pool:
    if opts.scheduler:
        from pypto_tui.suite.dask_pool import DaskPool

        if opts.workers is not None:
            raise InputError("--workers sizes the local pool; with --scheduler the cluster's workers decide "
                             "(start them with `dask worker ADDRESS --nthreads N`)")
        return DaskPool(opts.scheduler)
    from pypto_tui.suite.local_pool import LocalPool

    return LocalPool(local_capacity(needs, opts.workers))


def _describe(pool: Any) -> str:
    return str(pool.describe())
