"""Which kernels of a task `tile`, `loop` and `sim` show: every one, one by position (--kernel-index) or
the first that runs in a submodule of the model (--submodule layer1.0).

A whole model is many kernels and its user knows where a kernel sits in the model, not its index. The
kernels are `design.task_kernels`', the ones `contract`, `scaffold`, the app and `verify` take, so the
tile and loop shown here are theirs. Imported when a task file is given (the plain `tile --shape`
one-shot does not load it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_tui.cli.common import note
from pypto_tui.errors import InputError

if TYPE_CHECKING:
    from pypto_tui.design import Pipeline, TaskKernel


@dataclass(frozen=True)
class Shown:
    """One kernel of a chain as the commands head it: `kernel 2 (conv) in layer1.0`."""

    index: int
    ops: str
    submodule: str

    def heading(self) -> str:
        return f"kernel {self.index} ({self.ops})" + (f" in {self.submodule}" if self.submodule else "")

    def where(self) -> dict[str, Any]:
        """The keys a kernel's --json entry starts with."""
        return {"index": self.index, "ops": self.ops, "submodule": self.submodule}


def check_pick(kernel_index: int | None, submodule: str | None) -> None:
    """One way to pick a kernel at a time."""
    if kernel_index is not None and submodule is not None:
        raise InputError("give --kernel-index or --submodule, not both")


def pick(kernels: Sequence[TaskKernel], task_name: str, kernel_index: int | None,
         submodule: str | None) -> tuple[TaskKernel, ...]:
    """The kernels to show: all of them, the one at --kernel-index, or the first in --submodule (a note on
    stderr says so when the submodule holds several). A pick that names no kernel is an InputError."""
    from pypto_tui.contract.submodule import pick_submodule

    check_pick(kernel_index, submodule)
    if kernel_index is not None:
        if kernel_index >= len(kernels):
            raise InputError(f"--kernel-index {kernel_index}: {task_name} is {len(kernels)} kernels "
                             f"(0-{len(kernels) - 1}); drop the option to see them all")
        return (kernels[kernel_index],)
    if submodule is not None:
        picked = pick_submodule([k.submodule for k in kernels], submodule)
        if picked.note:
            note(picked.note)
        return (kernels[picked.position],)
    return tuple(kernels)


def task_pipelines(task: Path, kb: Any, kernel_index: int | None, submodule: str | None = None,
                   front_end: str = "static") -> list[tuple[Shown | None, Pipeline]]:
    """[(kernel, pipeline)] for a task: its one kernel (kernel None), or its module's kernels (those the
    options pick)."""
    from pypto_tui.contract.submodule import pick_submodule
    from pypto_tui.design import Design, Pipeline, split_by_graph, static_stop, task_kernels, task_submodule

    check_pick(kernel_index, submodule)
    p = Pipeline(kb, Design(task=str(task), front_end=front_end))
    c = p.contract()
    if c.supported and split_by_graph(p) is None:
        if kernel_index not in (None, 0):
            raise InputError(f"--kernel-index {kernel_index}: {task.name} is one kernel (index 0)")
        if submodule is not None:
            pick_submodule([task_submodule(c)], submodule)  # the one kernel, or why not
        return [(None, p)]
    found = task_kernels(p)
    if not found.kernels:
        if not static_stop(p):  # a model the reader stopped in has no shapes to ask for: say where it stopped
            p.geometry()  # says why there is no kernel shape
        raise InputError(f"{task.name}: {found.reason}")
    return [(Shown(k.index, k.ops, k.submodule), k.pipeline)
            for k in pick(found.kernels, task.name, kernel_index, submodule)]
