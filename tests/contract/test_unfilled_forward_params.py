"""A forward parameter with a default that get_inputs() does not fill (NetVLAD's `mask=None`) is a constant
of forward, as `forward(*get_inputs())` leaves it, not a kernel input with no shape; one without a default,
or with a default that is not a plain constant, stays an input the contract asks about."""

from __future__ import annotations

import pytest

from pypto_tui.contract.extract import extract_contract

TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, {extra}):
        return torch.relu(x){use}


def get_inputs():
    return [torch.randn(16, 256)]


def get_init_inputs():
    return []
'''


def test_a_defaulted_parameter_get_inputs_leaves_out_is_not_an_input() -> None:
    c = extract_contract(TASK.format(extra="mask=None", use=""))
    assert [i.name for i in c.inputs] == ["x"] and c.supported and c.op == "relu", c.reason


def test_forward_reads_the_default_where_it_uses_it() -> None:
    c = extract_contract(TASK.format(extra="scale=2.0", use=" * scale"))
    assert [i.name for i in c.inputs] == ["x"] and c.supported, c.reason
    assert "2.0" in (c.formula or ""), c.formula


@pytest.mark.parametrize("extra", ["mask", "mask=torch.ones(3)"])
def test_a_required_or_computed_default_stays_an_input(extra: str) -> None:
    c = extract_contract(TASK.format(extra=extra, use=""))
    assert [i.name for i in c.inputs] == ["x", "mask"]
