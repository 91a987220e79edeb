"""`torch.where` with a comparison, and the comparisons themselves, inside an elementwise kernel: the
kernel writes pypto.where(pypto.gt(x, y), ...) and verifies; the comparison turned around fails."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

pytestmark = [pytest.mark.sim, pytest.mark.exhaustive]  # CI: the causal attention test renders where and eq

SELECT = "pypto.where(pypto.gt(x, y), x, y * 0.5)"


def test_a_select_by_comparison_verifies_and_the_reversed_comparison_fails(kb, broken_twins):
    p = pipe(kb, "where_select.py")
    k = kernel_of(p)
    assert k.supported and SELECT in k.source, k.reason
    (ok,) = verify_many([p], jobs=1, cache=False)
    assert ok.passed and not ok.missing_passes, ok.reason
    (bad,) = broken_twins([(p, "pypto.gt(x, y)", "pypto.lt(x, y)")])
    assert bad.status == J.MISMATCH and bad.passed is False, (bad.status, bad.error)
