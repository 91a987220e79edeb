"""A tile clamped to a test row is rounded up to 32 bytes, and the kernel verifies (the real compiler).

KernelBench level-2 92's group norm, kernel by kernel, stopped with `CHECK FAILED: lastDimBytes %
BLOCK_SIZE == 0`: its test rows of 756 fp32 clamped the tile to (1, 756). Rounded up to (1, 760) the
kernel compiles and verifies at every pass.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import verify

TASK = Path(__file__).parent / "fixtures" / "tasks" / "group_norm_odd_width.py"


@pytest.mark.sim
def test_a_group_norm_tested_at_unaligned_rows_verifies(kb) -> None:
    report = verify(Pipeline(kb, Design(task=str(TASK))), cache=False)
    assert report.passed, report.reason
    assert report.tile == [1, 760]
