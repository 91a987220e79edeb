"""Shared fixtures for the code generator's tests: the fixture tasks and their generated modules.

Generation is pure and deterministic, so each (task, flavour) is generated once per session and
shared by the golden, compile, signature, forward and lint tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.codegen import GeneratedKernel
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.kb import KnowledgeBase

TESTS = Path(__file__).resolve().parent.parent
TASKS = TESTS / "fixtures" / "tasks"
GOLDEN = TESTS / "golden"
TASK_NAMES = sorted(p.stem for p in TASKS.glob("*.py"))
FLAVOURS = ("pypto-0.2.0", "docs")

_cache: dict[tuple[str, str], GeneratedKernel] = {}


def generate_task(kb: KnowledgeBase, task: str, flavour: str = "pypto-0.2.0", **design: object) -> GeneratedKernel:
    """A fresh pipeline for a fixture task name (or a task file path) and design fields."""
    path = TASKS / f"{task}.py" if not str(task).endswith(".py") else Path(task)
    return kernel_of(Pipeline(kb, Design(task=str(path), flavour=flavour, **design)))  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def fresh(kb: KnowledgeBase):  # type: ignore[no-untyped-def]
    """fresh(task, flavour="pypto-0.2.0", **design) -> GeneratedKernel, never cached."""

    def make(task: str, flavour: str = "pypto-0.2.0", **design: object) -> GeneratedKernel:
        return generate_task(kb, task, flavour, **design)

    return make


@pytest.fixture(scope="session")
def generated(kb: KnowledgeBase):  # type: ignore[no-untyped-def]
    """generated(task, flavour) -> GeneratedKernel, cached for the session."""

    def get(task: str, flavour: str = "pypto-0.2.0") -> GeneratedKernel:
        key = (task, flavour)
        if key not in _cache:
            _cache[key] = generate_task(kb, task, flavour)
        return _cache[key]

    return get
