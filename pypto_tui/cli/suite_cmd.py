"""`verify DIR` and `sim DIR`: a folder of tasks as one suite (pypto_tui.suite), with a progress
display, a summary table and a run in the history (`pypto-tui runs`).

`suite_dispatch("verify")` decorates the single-task command: it adds the suite's options to the
command's own, and when the task argument is a folder it runs the suite instead; each task then
runs that same command (`verify TASK --json` with the options given), so every option the
single-task command has, now or later, applies to every task. Options that choose one task's
design or kernel (--tile, --loop-count, --kernel-index, --submodule) are refused for a folder; --kernel
takes a folder of kernels named like the tasks. A sim suite compiles one candidate per task at a time
unless --jobs says otherwise: the parallelism is across tasks.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from pypto_tui.cli.common import Exit, emit_json, get_current_context, note
from pypto_tui.errors import InputError

F = TypeVar("F", bound=Callable[..., Any])

_FOLDER = "with a folder of tasks"
MAX_WORKERS = 1024
"""Most tasks run at once on one machine (each is a process of its own; a history stores the number)."""
SUITE_PARAMS = (
    inspect.Parameter("workers", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Annotated[
        int | None, typer.Option("--workers", min=1, max=MAX_WORKERS, show_default=False,
                                 help=f"{_FOLDER}: tasks at once on this machine (default: its cores, fewer when "
                                 "memory is short).")]),
    inspect.Parameter("scheduler", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Annotated[
        str | None, typer.Option("--scheduler", metavar="ADDRESS", show_default=False, help=f"{_FOLDER}: run on "
                                 "this Dask scheduler's workers (tcp://HOST:8786; the [cluster] extra).")]),
    inspect.Parameter("db", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None, annotation=Annotated[
        Path | None, typer.Option("--db", show_default=False, help=f"{_FOLDER}: the run history (SQLite; "
                                  "default: runs.sqlite in the platform's data folder).")]),
    inspect.Parameter("resume", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=False, annotation=Annotated[
        bool, typer.Option("--resume", help=f"{_FOLDER}: finish the last unfinished run over it, without redoing "
                           "the tasks it recorded.")]),
)
SUITE_NAMES = tuple(p.name for p in SUITE_PARAMS)
REFUSED = {"tile": "--tile", "loop_count": "--loop-count", "kernel_index": "--kernel-index",
           "submodule": "--submodule"}
NOT_PASSED = {"json_out", "kb", "kernel"}


def suite_dispatch(command: str) -> Callable[[F], F]:
    """Give a single-task command (`verify`, `sim`) the suite's options and its folder form."""

    def decorate(fn: F) -> F:
        own = inspect.signature(fn, eval_str=True)
        first = next(iter(own.parameters))

        # a suite option the command declares itself also means something for one task (verify's
        # --scheduler runs --per-kernel's kernels on the cluster): passed through, not refused
        shared = [n for n in SUITE_NAMES if n in own.parameters]

        @functools.wraps(fn)
        def wrapper(**kwargs: Any) -> Any:
            suite = {n: kwargs.pop(n, None) for n in SUITE_NAMES}
            target = kwargs[first]
            if isinstance(target, Path) and target.is_dir():
                return _run_suite(command, target, {k: v for k, v in kwargs.items() if k not in shared}, suite)
            given = [f"--{n}" for n, v in suite.items() if v not in (None, False) and n not in shared]
            if given:
                raise InputError(f"{', '.join(given)}: suite options; give a folder of tasks instead of {target}")
            return fn(**kwargs, **{n: suite[n] for n in shared})

        params = [*own.parameters.values(), *(p for p in SUITE_PARAMS if p.name not in own.parameters)]
        wrapper.__signature__ = own.replace(parameters=params)  # type: ignore[attr-defined]
        wrapper.__annotations__ = {**{p.name: p.annotation for p in params}, "return": own.return_annotation}
        return wrapper  # type: ignore[return-value]

    return decorate


def _task_args(values: dict[str, Any]) -> list[str]:
    """The options the user gave, as each task's command line (defaults left out)."""
    ctx = get_current_context(silent=True)
    args: list[str] = []
    for param in getattr(getattr(ctx, "command", None), "params", []):
        name = param.name
        if name not in values or name in NOT_PASSED or getattr(param, "param_type_name", "") != "option":
            continue
        value = values[name]
        if value == param.default or value is None:
            continue
        if name in REFUSED:
            raise InputError(f"{REFUSED[name]} chooses one task's design: drop it for a folder of tasks")
        if getattr(param, "is_flag", False):
            if value:
                args.append(param.opts[0])
            elif param.secondary_opts:
                args.append(param.secondary_opts[0])
            continue
        args += [param.opts[0], str(value.resolve() if isinstance(value, Path) else value)]
    return args


def _run_suite(command: str, folder: Path, values: dict[str, Any], suite: dict[str, Any]) -> None:
    from pypto_tui.cli.common import load_kb
    from pypto_tui.cli.progress import workers_end_with_us
    from pypto_tui.suite.suite_run import DEFAULT_TIME_LIMIT_S, SuiteOptions, check_options, run_suite

    kernel = values.get("kernel")
    if kernel is not None and not Path(kernel).is_dir():
        raise InputError(f"--kernel {kernel}: with a folder of tasks, give a folder of kernel modules named like the "
                         f"tasks (as `export TASKS -o KERNELS` writes them)")
    kb = values.get("kb")
    load_kb(kb)  # a bad pack is refused once, here, not once per task
    args = _task_args(values)
    if command == "sim" and "--jobs" not in args:
        args += ["--jobs", "1"]  # the suite runs tasks side by side: one compile per task unless asked
    if kb is not None:
        args += ["--kb", str(Path(kb).resolve())]
    if kernel is not None:  # recorded with the run, so --resume with another kernel folder is refused
        args += ["--kernel", str(Path(kernel).resolve())]
    timeout = float(values.get("timeout") or 0)
    opts = SuiteOptions(command=command, folder=folder, task_args=args, kernels=Path(kernel) if kernel else None,
                        workers=suite["workers"], scheduler=suite["scheduler"], db=suite["db"],
                        resume=bool(suite["resume"]), time_limit_s=max(DEFAULT_TIME_LIMIT_S, 2 * timeout + 300),
                        kb=str(kb) if kb is not None else None)
    json_out = bool(values.get("json_out"))
    check_options(opts)
    if command == "verify":
        note(f"verify executes the code in every task file of {folder} (each is its own baseline; run only files you "
             f"trust), each in a process of its own process group")
    from pypto_tui.cli.suite_view import SuiteProgress, show_summary

    with workers_end_with_us(), SuiteProgress(f"{command} {folder}") as display:
        result = run_suite(opts, display.update)
    if json_out:
        emit_json({"command": command, "folder": str(folder), "run": result.run.to_dict(), "db": str(result.db_path),
                   "pool": result.pool, "resumed": result.resumed, "totals": result.totals,
                   "tasks": [r.to_dict() for r in result.rows]})
    else:
        show_summary(result)
    sys.stdout.flush()
    raise typer.Exit(Exit.FINDINGS if result.failed else Exit.OK)
