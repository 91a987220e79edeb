"""Helpers more than one test folder needs (the root conftest puts this folder on sys.path:
importlib mode keeps conftest files themselves out of reach of `import`)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

LINT_PROBES = Path(__file__).resolve().parent / "lint" / "probes"
PYPTO_TUI = str(Path(sys.executable).with_name("pypto-tui"))  # the console script of this environment


def tiered(names: Iterable[str], in_ci: set[str]) -> list[Any]:
    """Parameters for a sweep: the names in `in_ci` as they are, the others marked `exhaustive`
    (CI runs one or more of each kind; `-m exhaustive` runs the rest)."""
    return [n if n in in_ci else pytest.param(n, marks=pytest.mark.exhaustive) for n in names]


CI_AND_REST = tiered(["ci", "rest"], {"ci"})
"""Parameters of a test that verifies several cases of one form: "ci" runs the first case in CI, "rest"
the others under `-m exhaustive` (each case is one more compile of a form the first already runs)."""


def part(cases: list[Any], which: str) -> list[Any]:
    """The cases a CI_AND_REST parameter runs."""
    return cases[:1] if which == "ci" else cases[1:]


@cache
def lint_probes() -> ModuleType:
    """tests/lint/probes/kernels.py: the compiler probes (PROBES, probe_source) on exp_task.py."""
    spec = importlib.util.spec_from_file_location("lint_compiler_probes", LINT_PROBES / "kernels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def parent_and_command(pid: int) -> tuple[int, bytes]:
    """(parent pid, command line) of a live process; OSError when it is gone."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1]), Path(f"/proc/{pid}/cmdline").read_bytes()


def selected_params(request: Any, test_name: str, param: str) -> list[Any]:
    """The values of `param` that the session will run `test_name` with (after -m, -k and CI's
    sample), so a fixture that compiles for every case compiles only for the selected ones."""
    values: list[Any] = []
    for item in request.session.items:
        spec = getattr(item, "callspec", None)
        if (getattr(item, "originalname", None) == test_name and spec is not None and param in spec.params
                and spec.params[param] not in values):
            values.append(spec.params[param])
    return values


ONE_LINE_TASK = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__(){body}

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def contract(expr: str, args: str = "x", body: str = "", shape: str = "16, 256") -> Any:
    """The contract of a task whose forward returns `expr` of `args` (each a randn of `shape`)."""
    from pypto_tui.contract.extract import extract_contract

    inputs = ", ".join(f"torch.randn({shape})" for _ in args.split(", "))
    return extract_contract(ONE_LINE_TASK.format(body=body, args=args, expr=expr, inputs=inputs))
