"""A normalisation's contract (its reduction, formula and refusals) is its registry entry's statistic:
semantics names no norm, so a new norm is one entry."""

from __future__ import annotations

import dataclasses

import pytest

from pypto_tui.contract.model import Contract, Input
from pypto_tui.contract.semantics import derive
from pypto_tui.ops import registry
from pypto_tui.ops.base import Statistic
from pypto_tui.ops.registry import REGISTRY


def _norm(op: str, args: dict[str, object], shape: tuple[int, ...]) -> Contract:
    x = Input(name="x", kind="tensor", shape=shape, dtype="fp32")
    return derive(Contract(task_path="t.py", supported=True, reason="", family="norm", op=op,
                           op_args={**args, "operands": ("x",)}, inputs=(x,)))


def test_batch_norm_reduces_every_axis_but_the_channels_and_refuses_running_statistics():
    c = _norm("batch_norm", {"eps": 1e-5, "training": True, "num_features": 8}, (4, 8, 5, 6))
    assert c.reduction is not None and c.reduction.axes == (0, 2, 3) and c.reduction.count == 4 * 5 * 6
    assert c.supported and "(N, H, W) = 120 values" in (c.formula or "")
    frozen = _norm("batch_norm", {"eps": 1e-5, "training": False, "num_features": 3}, (4, 8, 5))
    assert not frozen.supported and "running statistics" in frozen.reason
    assert "num_features=3 but the input has 8 channels" in frozen.unknown["output_shape"]


def test_group_norm_says_when_its_groups_do_not_split_the_channels():
    c = _norm("group_norm", {"num_groups": 3, "eps": 1e-5}, (2, 8, 4))
    assert c.reduction is None and "8 channels do not split into 3 groups" in c.unknown["reduction"]
    ok = _norm("group_norm", {"num_groups": 4, "eps": 1e-5}, (2, 8, 4))
    assert ok.reduction is not None and ok.reduction.axes == (1, 2) and ok.reduction.count == 2 * 4


def test_a_written_out_norm_warns_when_its_statistic_is_not_kept():
    c = _norm("l2_norm", {"dim": 0, "keepdim": False, "eps": 0.0}, (4, 8))
    assert c.reduction is not None and (c.reduction.op, c.reduction.scaling) == ("sum_square", "sum")
    assert "keepdim=False" in c.unknown["formula"]
    assert "formula" not in _norm("l2_norm", {"dim": 1, "keepdim": False, "eps": 0.0}, (4, 8)).unknown


@pytest.mark.parametrize("op", ["layer_norm", "normalize"])
def test_a_norm_without_its_statistic_is_not_scaffolded(op):
    c = _norm(op, {"eps": 1e-5}, (4, 8))
    assert not c.supported and c.reason == f"{op} is not a norm pypto-tui knows"


def test_a_new_norm_entry_is_read_with_no_other_change(monkeypatch: pytest.MonkeyPatch):
    base = registry.kind("frobenius_norm")
    assert base is not None
    rows = dataclasses.replace(base, name="row_max_norm", statistic=lambda shape, a, n: Statistic(
        "max_abs", (len(shape) - 1,), True, "none", None, f"out = {n} / max |{n}| per row"))
    monkeypatch.setattr(registry, "kind", lambda name: rows if name == "row_max_norm" else REGISTRY.get(name))
    c = _norm("row_max_norm", {}, (4, 8))
    assert c.supported and c.formula == "out = x / max |x| per row"
    assert c.reduction is not None and (c.reduction.op, c.reduction.axes) == ("max_abs", (1,))
