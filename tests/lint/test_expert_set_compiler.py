"""The lint's kernel set on the real compiler (marker `sim`): what "correct" and "broken" mean.

Every correct kernel in tests/lint/expert/ verifies against its torch baseline on pypto 0.2.0.
Every broken twin whose defect is an error fails there (refused, crashed, or wrong numbers); a
twin whose defect is only a warning (P4.tile-extra-dims) still verifies, which is why it is one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import selected_params

from pypto_tui.contract.reader import read_task
from pypto_tui.contract.values import TensorSpec
from pypto_tui.kb import get_kb
from pypto_tui.sim import jobs, runner
from pypto_tui.sim.cache import ResultCache

pytestmark = pytest.mark.sim

EXPERT = Path(__file__).parent / "expert"
TASKS = EXPERT / "tasks"
GOOD = sorted(EXPERT.glob("*.py"))
BROKEN = sorted((EXPERT / "broken").glob("*.py"))
_TASK = re.compile(r"^# expert-set: task=(\S+)", re.M)
_EXPECT = re.compile(r"^# expert-set: expect=(\S+)", re.M)


def _task_of(kernel: Path) -> Path:
    good = EXPERT / f"{kernel.stem.split('__')[0]}.py"
    found = _TASK.search(good.read_text(encoding="utf-8"))
    assert found
    return TASKS / found.group(1)


def _job(kernel: Path) -> jobs.SimJob:
    task = _task_of(kernel)
    facts = read_task(task.read_text(encoding="utf-8"), str(task))
    inputs = tuple(jobs.InputSpec(tuple(i.shape), i.dtype) for i in facts.inputs if isinstance(i, TensorSpec))
    return jobs.SimJob(kind="verify", kernel_source=kernel.read_text(encoding="utf-8"), inputs=inputs,
                       task_file=str(task), label=kernel.stem)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict[str, jobs.SimResult]:
    chosen = (selected_params(request, "test_correct_kernel_verifies", "path")
              + selected_params(request, "test_broken_twin_fails_when_its_defect_is_an_error", "path"))
    done = runner.run_many([_job(p) for p in chosen], jobs=2, timeout_s=300,
                           cache=ResultCache(tmp_path_factory.mktemp("expert")))
    return {r.label: r for r in done}


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_correct_kernel_verifies(results: dict[str, jobs.SimResult], path: Path) -> None:
    r = results[path.stem]
    assert r.status == jobs.OK and r.passed, (r.status, r.error, r.reason)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_twin_fails_when_its_defect_is_an_error(results: dict[str, jobs.SimResult], path: Path) -> None:
    r = results[path.stem]
    expect = _EXPECT.search(path.read_text(encoding="utf-8"))
    assert expect
    if get_kb().rules[expect.group(1)].severity == "error":
        assert r.status in (jobs.COMPILE_ERROR, jobs.ERROR, jobs.CRASHED, jobs.MISMATCH), (r.status, r.reason)
    else:
        assert r.status == jobs.OK and r.passed, (r.status, r.error, r.reason)
