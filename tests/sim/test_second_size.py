"""The second test size with the real compiler, on a kernel cheap enough for every CI run: a row sum
whose kernel is built for the first test width whatever width it is given passes at that width and
fails at the second one; asked for one size (`--sizes 1`), it passes and the report says what was
left out."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import Criterion, verify, verify_many

pytestmark = [pytest.mark.sim, pytest.mark.slow]

TASK = Path(__file__).parent / "fixtures" / "tasks" / "sum_wide_rows.py"
BUILD = "kernel = create_sum_kernel(d0, d1)"


def test_a_kernel_built_for_the_first_width_fails_at_the_second(kb, tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    r = CliRunner().invoke(app, ["scaffold", str(TASK), "-o", str(clean)])
    assert r.exit_code == 0, r.output
    source = clean.read_text(encoding="utf-8")
    assert source.count(BUILD) == 1
    p = Pipeline(kb, Design(task=str(TASK)))
    ok, = verify_many([p], kernels=[clean], jobs=1, timeout_s=900, criterion=Criterion(sizes=2))
    assert ok.passed, ok.reason
    first, second = ok.size_trials
    width = first["shapes"]["x"][1]
    assert second["shapes"]["x"][1] != width and second["passed"]
    planted = tmp_path / "first_width.py"
    planted.write_text(source.replace(BUILD, f"kernel = create_sum_kernel(d0, {width})"), encoding="utf-8")

    bad = verify(p, kernel=planted, timeout_s=900, criterion=Criterion(sizes=2))
    assert not bad.passed and bad.reason.startswith("at the second test size"), bad.reason
    assert [t["passed"] for t in bad.size_trials] == [True, False]

    quick = verify(p, kernel=planted, timeout_s=900, criterion=Criterion(sizes=1))
    assert quick.passed and len(quick.size_trials) == 1 and quick.test_sizes == 1
    assert any("--sizes 1" in n and "not run" in n for n in quick.notes), quick.notes
