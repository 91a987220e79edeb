"""Shared fixtures for the sim tests.

Tests marked `sim` need pypto 0.2.0 and CPU torch; tests/conftest.py skips them (with the install
hint as the reason) when either is missing, by their marker: the unmarked tests here (numpy only) run
without them. Those tests keep the result cache in a temp dir, but the calculator library goes to
the normal cache folder, so its ~30-60 s build happens once per machine, not once per test run.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
sys.path.insert(0, str(Path(__file__).parent))  # `from family import ...` (the families' shared helpers)
TASKS = FIXTURES / "tasks"


def _kernel_source(name: str, **constants: object) -> str:
    """The fixture module `name`, with top-level `NAME = ...` lines replaced by `constants`."""
    text = (FIXTURES / f"{name}.py").read_text(encoding="utf-8")
    for key, value in constants.items():
        text, n = re.subn(rf"^{key} = .*$", f"{key} = {value!r}", text, count=1, flags=re.M)
        assert n == 1, f"{name}.py has no top-level {key} = ..."
    return text


def process_alive(pid: int) -> bool:
    """Running (a zombie waiting for a reaper that never comes does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


@pytest.fixture(scope="session")
def alive() -> Callable[[int], bool]:
    return process_alive


@pytest.fixture(scope="session")
def kernel_source() -> Callable[..., str]:
    return _kernel_source


@pytest.fixture(scope="session")
def task_file() -> Callable[[str], str]:
    return lambda name: str(TASKS / f"{name}.py")


@pytest.fixture(scope="session")
def broken_twins() -> Callable[..., list]:
    """Verify kernels with one deliberate mistake: `run([(pipeline, old, new), ...])` generates each
    pipeline's verify job at reduced shapes, replaces the text `old` (which must occur) by `new` in
    the kernel, and runs the jobs one at a time (the machine is shared). A family's broken twin must fail."""
    from dataclasses import replace

    from pypto_tui.sim.runner import run_many
    from pypto_tui.sim.verification import prepare_verify

    def run(cases: list[tuple[object, str, str]]) -> list:
        jobs = []
        for pipeline, old, new in cases:
            job = prepare_verify(pipeline).job  # type: ignore[arg-type]
            assert job is not None, f"{pipeline}: no verify job"
            assert old in job.kernel_source, f"'{old}' is not in the kernel:\n{job.kernel_source}"
            jobs.append(replace(job, kernel_source=job.kernel_source.replace(old, new), label=f"broken: {new}"))
        return run_many(jobs, jobs=1, cache=False)

    return run
