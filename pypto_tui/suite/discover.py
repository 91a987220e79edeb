"""A suite's tasks: the task files of a folder (as `export` reads it), in natural order
(`2_ReLU.py` before `10_...`), and the kernel module that goes with each when the user gives a
folder of kernels (`verify TASKS/ --kernel KERNELS/`: KERNELS/<the task's file name>, the names
`export TASKS -o KERNELS` writes)."""

from __future__ import annotations

import re
from pathlib import Path

from pypto_tui.errors import InputError
from pypto_tui.export import task_files


def natural_key(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", name)]


def suite_tasks(folder: Path) -> list[Path]:
    files = sorted(task_files(folder), key=lambda p: natural_key(p.name))
    if not files:
        raise InputError(f"{folder} holds no task files (*.py): give a folder of KernelBench-style tasks")
    return files


def kernel_for(task: Path, kernels: Path) -> Path:
    """The kernel module for `task` in the folder `kernels` (it may be missing: the task's
    command then says so, as one failing task, and the others go on)."""
    return kernels / task.name
