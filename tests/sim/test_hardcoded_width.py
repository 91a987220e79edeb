"""A kernel that hard-codes the width verify's old test shapes had must fail, through the real compiler.

KernelBench level-2 14 (GEMM, / 2, row sum, * 1.5) was verified with hidden 8192 shrunk to 2048:
exactly two of the row sum's 1024-wide tiles. A row sum over the first 2048 columns only (wrong at
the task's 8192) passed. The test sizes now give the row sum an odd number of tiles, at least three
(and the matmul's K the same in its cube tiles), and a second size with another count; both must
pass. Both modules go through `verify --kernel`, whose sizes follow the file's own constants. Four
level-2 verifications: outside CI's time (run with -m exhaustive); tests/sim/test_tile_counts.py checks
the sizes without the compiler in CI.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import Criterion, verify_many

pytestmark = [pytest.mark.sim, pytest.mark.slow, pytest.mark.exhaustive]  # four level-2 verifies: 12 min under load

TASK = Path(__file__).parent / "fixtures" / "tasks" / "gemm_divide_sum_scaling.py"
ROW_SUM = "pypto.sum(n2, 1, keepdim=True)"
FIRST_2048 = "pypto.sum(pypto.view(n2, [d0, 2048], [0, 0]), 1, keepdim=True)"


def test_a_row_sum_hard_coded_to_the_old_test_width_fails_and_the_module_passes(kb, tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    r = CliRunner().invoke(app, ["scaffold", str(TASK), "-o", str(clean)])
    assert r.exit_code == 0, r.output
    source = clean.read_text(encoding="utf-8")
    assert source.count(ROW_SUM) == 1
    planted = tmp_path / "first_2048.py"
    planted.write_text(source.replace(ROW_SUM, FIRST_2048), encoding="utf-8")
    p = Pipeline(kb, Design(task=str(TASK)))
    ok, bad = verify_many([p, p], kernels=[clean, planted], jobs=1, timeout_s=1200, cache=False,
                           criterion=Criterion(sizes=2))

    assert ok.passed and ok.design_kept and not ok.missing_passes, ok.reason
    assert [t["passed"] for t in ok.size_trials] == [True, True]
    hidden = [t["sizes"]["hidden_size"][1] for t in ok.size_trials]
    assert 2048 not in hidden and hidden[0] != hidden[1]
    (row_sum,) = [c for c in ok.tile_counts if "(sum)" in c["axis"]]
    assert row_sum["tiles"] == 3 and row_sum["tile"] == 1024 and row_sum["size"] == hidden[0]
    (k,) = [c for c in ok.tile_counts if c["axis"].endswith(": K")]
    assert k["tiles"] >= 3 and k["tiles"] % 2 == 1

    assert not bad.passed and bad.status == "mismatch", bad.reason
    assert "elements outside atol" in bad.reason, bad.reason
