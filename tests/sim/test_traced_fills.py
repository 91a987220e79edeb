"""A block of one value inside a concatenation (Swin V2's qkv bias, `cat((q_bias, zeros_like(v_bias),
v_bias))`), traced: the fill becomes a constant pad of its neighbour, and the module verifies through the
real compiler with every kernel run; a twin filling with ones fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

pytestmark = [pytest.mark.sim, pytest.mark.torch]

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced" / "qkv_bias.py"


def test_a_bias_with_a_zero_block_verifies_and_a_twin_filling_ones_fails(cache, kb, broken_twins):
    p = Pipeline(kb, Design(task=str(TASK), front_end="traced"))
    (r,) = verify_many([p], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason
    assert r.kernels == 4 and r.kernels_run == 4 and r.pass_rows >= 6 * 4 and not r.missing_passes
    (bad,) = broken_twins([(Pipeline(kb, Design(task=str(TASK), front_end="traced")), "FILL = 0.0", "FILL = 1.0")])
    assert bad.status != J.OK and bad.passed is False, (bad.label, bad.status, bad.error)
