"""The rank-5 softmax and min with their kept axes merged in forward verify (every element, every pass)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import tiered

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import verify

pytestmark = pytest.mark.sim

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"


@pytest.mark.parametrize("task", tiered(["softmax_rank5_channels.py", "amin_rank5_depth.py"],
                                        set()))  # CI: the codegen tests; level 2's 6, 13, 24 verify
def test_rank5_merged_kernels_verify(kb, task):
    report = verify(Pipeline(kb, Design(task=str(EXTRA / task))), cache=False)
    assert report.passed and report.design_kept, report.reason
    assert len(report.shapes["x"]) == 5 and not report.missing_passes
