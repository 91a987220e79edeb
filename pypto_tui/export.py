"""Scaffold one task, or every task in a folder, to PyPTO kernel modules on disk.

Writing is deterministic (the same design gives the same bytes) and atomic (a temporary file in
the target folder, then a rename: `pypto_tui.fileio.write_atomic`), and refuses to replace an
existing file unless `force`. In a folder export one task failing never stops the others: every
task gets a row (ok | unsupported | error, with the reason), and the report is plain data that
serialises to JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pypto_tui.codegen.result import GeneratedKernel
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.errors import InputError
from pypto_tui.fileio import check_within, check_writable, require_file, write_atomic
from pypto_tui.kb import KnowledgeBase

Status = Literal["ok", "unsupported", "error"]


@dataclass
class ScaffoldResult:
    """One task's outcome. `output` is the written path (None when nothing was written)."""

    task: str
    status: Status
    reason: str = ""
    family: str | None = None
    op: str | None = None
    pattern: str = ""
    flavour: str = ""
    output: str | None = None
    seconds: float = 0.0
    kernel: GeneratedKernel | None = field(default=None, repr=False)
    front_end: str = "static"

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def source(self) -> str:
        return self.kernel.source if self.kernel else ""

    def to_dict(self, with_source: bool = False) -> dict[str, Any]:
        d: dict[str, Any] = {
            "task": self.task, "family": self.family, "op": self.op, "status": self.status,
            "reason": self.reason, "pattern": self.pattern, "flavour": self.flavour, "output": self.output,
            "seconds": round(self.seconds, 4), "front_end": self.front_end,
        }
        if self.kernel is not None:
            d["constants"] = self.kernel.constants
            d["findings"] = [f.to_dict() for f in self.kernel.findings]
            if with_source:
                d["source"] = self.kernel.source
        return d


@dataclass
class ExportReport:
    tasks_dir: str
    out_dir: str
    rows: list[ScaffoldResult]
    seconds: float = 0.0
    skipped: list[str] = field(default_factory=list)
    """Files passed over: kernel modules (they define ModelNew and no Model), e.g. an earlier export."""

    @property
    def counts(self) -> dict[str, int]:
        out = {"ok": 0, "unsupported": 0, "error": 0}
        for r in self.rows:
            out[r.status] += 1
        return out

    @property
    def failed(self) -> bool:
        """True when any task was not scaffolded (the CLI exits 1)."""
        return any(r.status != "ok" for r in self.rows)

    def to_dict(self) -> dict[str, Any]:
        return {"tasks_dir": self.tasks_dir, "out_dir": self.out_dir, "counts": self.counts,
                "seconds": round(self.seconds, 4), "tasks": [r.to_dict() for r in self.rows],
                "skipped": list(self.skipped)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n"


def _generate(task_path: Path, kb: KnowledgeBase, flavour: str | None,
              dynamic_axis: int | None = None, front_end: str = "static") -> tuple[Pipeline, GeneratedKernel]:
    pipeline = Pipeline(kb, Design(task=str(task_path), kb=str(kb.path), flavour=flavour, dynamic_axis=dynamic_axis,
                                   front_end=front_end))
    return pipeline, kernel_of(pipeline)


def scaffold_task(task_path: str | Path, kb: KnowledgeBase, out_path: str | Path | None = None,
                  force: bool = False, flavour: str | None = None, dynamic_axis: int | None = None,
                  within: str | Path | None = None, front_end: str = "static") -> ScaffoldResult:
    """Generate the module for one task file; write it to `out_path` when given.

    Bad input (no such file, not a task file, an unknown flavour) raises InputError as every
    command does; a task that cannot be scaffolded returns status "unsupported" with the reason;
    an existing `out_path` without `force` raises InputError and nothing is written; with `within`
    (export's output folder), so does an `out_path` that is a link out of that folder.
    """
    task = Path(task_path)
    require_file(task, "task file")  # says what it is instead: missing, a folder, a FIFO...
    fl = kb.flavour(flavour).name
    if out_path is not None:
        out = Path(out_path)
        real, _ = check_writable(out, force)  # before any work: a FIFO, a device, an existing file without --force
        if within is not None:
            check_within(out, real, Path(within))
        if out.resolve() == task.resolve():
            raise InputError(f"{out} is the task file itself: choose another output path")
    t0 = time.perf_counter()
    pipeline, kernel = _generate(task, kb, fl, dynamic_axis, front_end)
    c = pipeline.contract()
    result = ScaffoldResult(task=str(task), status="ok" if kernel.supported else "unsupported",
                            reason=kernel.reason, family=c.family, op=c.op, pattern=kernel.pattern,
                            flavour=kernel.flavour, kernel=kernel, front_end=front_end)
    if kernel.supported and out_path is not None:
        result.output = str(write_atomic(Path(out_path), kernel.source, force=force, within=within))
    result.seconds = time.perf_counter() - t0
    return result


def task_files(tasks_dir: str | Path) -> list[Path]:
    """The task files of a folder: every *.py except private ones (`_*.py`, `__init__.py`), sorted."""
    d = Path(tasks_dir)
    if not d.is_dir():
        raise InputError(f"{d} is not a folder: export takes a folder of task files (scaffold takes one)")
    return sorted(p for p in d.glob("*.py") if p.is_file() and not p.name.startswith("_"))


MAX_MODULE_CHECK_BYTES = 4 << 20


def is_kernel_module(path: Path) -> bool:
    """A file that defines `ModelNew` and no `Model` at its top level: a kernel module (an export,
    the app's default export path), not a task. Anything unreadable is left to the scaffold to report."""
    import ast

    try:
        if path.stat().st_size > MAX_MODULE_CHECK_BYTES:
            return False
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    return "ModelNew" in classes and "Model" not in classes


def export_dir(tasks_dir: str | Path, out_dir: str | Path, kb: KnowledgeBase, force: bool = False,
               flavour: str | None = None, dynamic_axis: int | None = None, front_end: str = "static",
               prepare: Callable[[Path], object] | None = None) -> ExportReport:
    """Scaffold every task of `tasks_dir` into `out_dir/<task>.py`, one row per task. `prepare(task)` runs
    first for each task (the CLI traces it there, with its note and timeout, for the traced front end)."""
    src, dst = Path(tasks_dir), Path(out_dir)
    files = task_files(src)
    if dst.exists() and dst.resolve() == src.resolve():
        raise InputError(f"{dst} is the tasks folder: write the modules to another folder")
    kb.flavour(flavour)  # an unknown flavour is bad input for the whole export
    t0 = time.perf_counter()
    rows: list[ScaffoldResult] = []
    skipped: list[str] = []
    for task in files:
        if is_kernel_module(task):
            skipped.append(str(task))
            continue
        t1 = time.perf_counter()
        try:
            if prepare is not None:
                prepare(task)
            row = scaffold_task(task, kb, dst / task.name, force=force, flavour=flavour, dynamic_axis=dynamic_axis,
                                within=dst, front_end=front_end)
        except InputError as exc:
            row = ScaffoldResult(task=str(task), status="error", reason=str(exc), front_end=front_end)
        except Exception as exc:  # one broken task never stops the others
            row = ScaffoldResult(task=str(task), status="error", reason=f"internal error: {type(exc).__name__}: {exc}")
        row.seconds = time.perf_counter() - t1
        rows.append(row)
    return ExportReport(str(src), str(dst), rows, time.perf_counter() - t0, skipped)
