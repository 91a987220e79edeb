"""CONV.zeros-allocated: a pre kernel writes its data alone, into planes forward allocates holding the fill
(torch.zeros for a conv's or an average pool's padding, torch.full(-inf) for a max pool's). The interpreter
(like the chip) leaves what a kernel never writes as forward allocated it, so the allocation is part of the
module's meaning: the generated module verifies, and the same module allocating ones fails on the borders."""

from __future__ import annotations

import pytest
from family import CONV

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J

TASK = CONV / "avgpool3d_asymmetric.py"
ALLOCATION = "prepared = torch.zeros((n * c, QD, 2 * PH, QW), dtype=torch.float32, device=x_planes.device)"


def test_a_zero_padded_pre_kernel_writes_no_fill_and_forward_allocates_zeros(kb):
    k = kernel_of(Pipeline(kb, Design(task=str(TASK))))
    assert k.supported, k.reason
    assert ALLOCATION in k.source and "pypto.full(" not in k.source
    maxpool = kernel_of(Pipeline(kb, Design(task=str(CONV / "maxpool3d.py"))))
    assert "pypto.full(" not in maxpool.source and 'float("-inf"), dtype=torch.float32' in maxpool.source


@pytest.mark.sim
def test_the_zeros_are_what_the_borders_read_and_an_allocation_of_ones_fails(kb, broken_twins):
    p = Pipeline(kb, Design(task=str(TASK)))
    (ok, bad) = broken_twins([(p, ALLOCATION, ALLOCATION), (Pipeline(kb, Design(task=str(TASK))), ALLOCATION,
                                                            ALLOCATION.replace("torch.zeros(", "torch.ones("))])
    assert ok.status == J.OK and ok.passed, (ok.status, ok.error)
    assert bad.passed is False, (bad.label, bad.status, bad.error)
