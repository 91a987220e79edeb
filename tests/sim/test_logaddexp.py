"""torch.logaddexp (one registry entry) verified through the real compiler, over a broadcast row and
values whose exp overflows fp32; a twin that takes the smaller operand instead of the larger fails."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = "logaddexp_broadcast.py"


@pytest.mark.sim
def test_logaddexp_verifies_against_torch(kb):
    (r,) = verify_many([pipe(kb, TASK)], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason


@pytest.mark.sim
def test_a_logaddexp_on_the_smaller_operand_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, TASK), "pypto.maximum(a, b_all_w0) +", "pypto.minimum(a, b_all_w0) +")])
    assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
