"""Rotary embeddings (issue 21's fused blocks): the reader folds the written-out rotate_half into one
call, the registry computes it as torch does, and the dimension step keeps the last axis whole."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.design import Design, Pipeline, module_plan_of
from pypto_tui.ops import kind

CHAINS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"

TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, cos, sin):
        return x * cos + {rotated} * sin


def get_inputs():
    return [torch.randn(4, 32, 64), torch.randn(4, 32, 64), torch.randn(4, 32, 64)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("rotated", [
    "torch.cat((-x[..., 32:], x[..., :32]), dim=-1)",
    "torch.cat((-x[:, :, 32:], x[:, :, :32]), dim=2)",
    "torch.cat([-x[..., 32:64], x[..., 0:32]], -1)",
])
def test_written_out_rotate_half_is_one_call(rotated: str) -> None:
    c = extract_contract(TASK.format(rotated=rotated))
    assert c.supported and c.family == "elementwise", c.reason
    assert c.formula and "rotate_half(x)" in c.formula
    ops = [n["op"] for n in c.graph["nodes"]]
    assert "rotate_half" in ops and "cat" not in ops


@pytest.mark.parametrize("rotated", [
    "torch.cat((x[..., 32:], -x[..., :32]), dim=-1)",   # the other sign: not rotate_half
    "torch.cat((-x[..., 32:], x[..., :32]), dim=1)",    # along another axis
    "torch.cat((-x[..., 16:], x[..., :48]), dim=-1)",   # not the halves
    "torch.cat((-cos[..., 32:], x[..., :32]), dim=-1)",  # halves of two tensors
])
def test_other_concatenations_are_left_alone(rotated: str) -> None:
    c = extract_contract(TASK.format(rotated=rotated))
    assert "rotate_half" not in (c.formula or "")
    assert not any(n["op"] == "rotate_half" for n in (c.graph or {}).get("nodes", ()))


def test_the_registry_computes_rotate_half_as_torch_does() -> None:
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 8, 16)).astype(np.float32)
    k = kind("rotate_half")
    assert k is not None and k.row_local and k.is_elementwise
    want = torch.cat((-torch.from_numpy(x)[..., 8:], torch.from_numpy(x)[..., :8]), dim=-1).numpy()
    assert np.array_equal(k.reference(x), want)
    assert k.shape([(3, 8, 16)], {}) == (3, 8, 16)
    with pytest.raises(ValueError, match="even last axis"):
        k.shape([(3, 8, 15)], {})


def test_the_kernel_keeps_the_last_axis_whole(kb) -> None:
    p = Pipeline(kb, Design(task=str(CHAINS / "rotary.py")))
    assert p.dims().kernel_shapes[0][-1] == 128 and len(p.dims().kernel_shapes[0]) == 2
    assert p.chosen_tile()[-1] == 128  # a tile over the whole head dimension


def test_rope_then_scores_is_four_kernels(kb) -> None:
    """Each rope is one kernel (q * cos and rotate_half(q) * sin meet in their sum: the earlier
    chain joins its only reader), the transposed keys are the matmul's operand, then the scale."""
    graph, plan = module_plan_of(Pipeline(kb, Design(task=str(CHAINS / "rope_scores.py"))))
    ops = [[graph.node(i).op for i in g.nodes] for g in plan.groups]
    assert ops == [["mul", "rotate_half", "mul", "add"]] * 2 + [["transpose", "matmul"], ["mul"]]
