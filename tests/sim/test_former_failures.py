"""The three KernelBench-style tasks that were scaffolded but did not verify (issue 11), on
fixtures of our own: GroupNorm (the worker died: a (1, 16384) fp32 row-norm tile leaves
Pass_36 unrunnable; ops.toml now holds 4 live buffers, so the tile steps down to (1, 8192)), a
matmul with odd, non-multiple sizes (it could not shrink, so verify ran it at full size over the
worker's memory cap) and a batched matmul (its test shapes had no legal cube tiles)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.verification import verify_many

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = ["tasks/group_norm.py", "tasks_extra/group_norm_six_groups.py", "tasks_extra/matmul_irregular_odd.py",
         "tasks_extra/bmm_wide_batch.py"]


@pytest.mark.sim
def test_the_former_failures_verify_at_every_pass(kb):
    reports = verify_many([Pipeline(kb, Design(task=str(FIXTURES / c))) for c in CASES], jobs=1, cache=False)
    for case, r in zip(CASES, reports, strict=True):
        assert r.supported and r.passed, (case, r.status, r.reason)
        assert r.missing_passes == [] and r.first_failing_pass is None, (case, r.missing_passes)
        assert max(math.prod(s) for s in r.shapes.values()) <= 1 << 20
    norm = reports[0]
    assert norm.tile == [1, 8192] and norm.design_kept  # the stepped-down tile is the one verified
    (m, k), (_, n) = reports[2].shapes["A"], reports[2].shapes["B"]
    assert all(d % 2 for d in (m, k, n)) and reports[2].design_kept
    if reports[2].loop_count != reports[2].design_loop_count:  # two iterations and the tail kept; the count listed
        assert any(c.startswith(f"LOOP_COUNT = {reports[2].design_loop_count} -> ") for c in reports[2].changes)
