"""P0.contract-first lists the contract's open fields; when one refusal left them all open (an operator
the reader does not know), the reason is given once, not once per field."""

from __future__ import annotations

from pypto_tui.contract import extract_contract
from pypto_tui.contract.checks import check_unknown_fields

TASK = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return torch.sort(x, dim=1)[0]\n\n\ndef get_inputs():\n    return [torch.randn(8, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n")


def test_one_reason_for_every_open_field_is_said_once(kb) -> None:
    c = extract_contract(TASK, kb)
    assert len(c.unknown) > 1 and len(set(c.unknown.values())) == 1
    (finding,) = check_unknown_fields(c, kb)
    reason = next(iter(c.unknown.values()))
    assert finding.message.count(reason) == 1
    assert ", ".join(sorted(c.unknown)) + ": " + reason in finding.message


def test_different_reasons_stay_with_their_fields(kb) -> None:
    c = extract_contract(TASK, kb)
    c.unknown["op_args.dim"] = "dim=7 is not an axis of a rank-2 input"
    (finding,) = check_unknown_fields(c, kb)
    assert "op_args.dim: dim=7 is not an axis" in finding.message
    assert finding.message.count(next(v for k, v in c.unknown.items() if k != "op_args.dim")) == len(c.unknown) - 1
