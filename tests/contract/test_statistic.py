"""A normalisation's or a loss's contract (its reduction, formula, output shape, operand roles and
refusals) is its registry entry's statistic: semantics names no norm and no loss with a statistic, so a
new one is one entry."""

from __future__ import annotations

import dataclasses

import pytest

from pypto_tui.contract.model import Contract, Input
from pypto_tui.contract.semantics import derive
from pypto_tui.ops import registry
from pypto_tui.ops.base import Statistic
from pypto_tui.ops.registry import REGISTRY


def _norm(op: str, args: dict[str, object], shape: tuple[int, ...]) -> Contract:
    return _derived("norm", op, args, ("x", shape, "fp32"))


def _derived(family: str, op: str, args: dict[str, object], *inputs: tuple[str, tuple[int, ...], str]) -> Contract:
    ins = tuple(Input(name=n, kind="tensor", shape=s, dtype=d) for n, s, d in inputs)
    return derive(Contract(task_path="t.py", supported=True, reason="", family=family, op=op,
                           op_args={**args, "operands": tuple(n for n, _, _ in inputs)}, inputs=ins))


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


def test_a_norm_without_its_statistic_is_not_scaffolded_and_says_why():
    c = _norm("layer_norm", {"eps": 1e-5}, (4, 8))
    assert not c.supported and c.reason == "layer_norm is not a norm pypto-tui knows"
    p3 = _norm("normalize", {"p": 3.0, "dim": 1, "eps": 1e-12}, (4, 8))  # the entry's own words
    assert not p3.supported and p3.reason.startswith("F.normalize is scaffolded for p=1 and p=2")


def test_a_new_norm_entry_is_read_with_no_other_change(monkeypatch: pytest.MonkeyPatch):
    base = registry.kind("frobenius_norm")
    assert base is not None
    rows = dataclasses.replace(base, name="row_max_norm", statistic=lambda ops, a: Statistic(
        "max_abs", (len(ops[0].shape) - 1,), True, "none", None, f"out = {ops[0].name} / max |{ops[0].name}| per row"))
    monkeypatch.setattr(registry, "kind", lambda name: rows if name == "row_max_norm" else REGISTRY.get(name))
    c = _norm("row_max_norm", {}, (4, 8))
    assert c.supported and c.formula == "out = x / max |x| per row"
    assert c.reduction is not None and (c.reduction.op, c.reduction.axes) == ("max_abs", (1,))


def test_a_triplet_loss_reduces_per_sample_distances_and_names_the_anchor():
    c = _derived("loss", "triplet_margin_loss", {"reduction": "mean", "margin": 1.0, "p": 2.0, "eps": 1e-6},
                 ("a", (8, 16), "fp32"), ("p", (8, 16), "fp32"), ("n", (8, 16), "fp32"))
    assert c.reduction is not None and (c.reduction.op, c.reduction.axes, c.reduction.count) == ("mean", (0,), 8)
    assert (c.reduction.inner_op, c.reduction.inner_axes) == ("pairwise_distance", (1,))
    assert c.output_shape == () and c.asymmetric is True and "'a' is the anchor" in (c.direction or "")


def test_cross_entropy_refuses_probability_targets_and_keeps_the_samples_without_a_reduction():
    probs = _derived("loss", "cross_entropy", {"reduction": "mean"}, ("z", (4, 10), "fp32"), ("t", (4, 10), "fp32"))
    assert not probs.supported and "class probabilities" in probs.reason
    each = _derived("loss", "cross_entropy", {"reduction": "none"}, ("z", (4, 10), "fp32"), ("t", (4,), "int64"))
    assert each.output_shape == (4,) and not each.supported and "returns a tensor" in each.reason
    assert each.direction == "'z' are logits, 't' class indices"


def test_a_cosine_loss_sums_one_minus_the_cosine_over_the_rest():
    c = _derived("loss", "cosine_similarity", {"dim": 1, "eps": 1e-8, "reduction": "sum", "offset": 1},
                 ("a", (6, 5), "fp32"), ("b", (6, 5), "fp32"))
    assert c.reduction is not None and (c.reduction.op, c.reduction.axes, c.reduction.inner_op) == (
        "sum", (0,), "cosine_similarity")
    assert c.output_shape == () and c.formula is not None and c.formula.startswith("sum_i (1 - cos_i), cos_i")


def test_a_new_loss_entry_is_read_with_no_other_change(monkeypatch: pytest.MonkeyPatch):
    base = registry.kind("triplet_margin_loss")
    assert base is not None
    worst = dataclasses.replace(base, name="worst_pair_loss", statistic=lambda ops, a: Statistic(
        "amax", (0,), False, "none", None, f"max_i |{ops[0].name}_i - {ops[1].name}_i|", output_shape=(),
        asymmetric=False))
    monkeypatch.setattr(registry, "kind", lambda name: worst if name == "worst_pair_loss" else REGISTRY.get(name))
    c = _derived("loss", "worst_pair_loss", {}, ("a", (6, 5), "fp32"), ("b", (6, 5), "fp32"))
    assert c.supported and c.formula == "max_i |a_i - b_i|" and c.output_shape == ()


def test_a_pointwise_loss_sums_its_entrys_term_by_its_reduction():
    mse = _derived("loss", "mse_loss", {"reduction": "mean"}, ("p", (4, 8), "fp32"), ("t", (4, 8), "fp32"))
    assert mse.reduction is not None and (mse.reduction.op, mse.reduction.count) == ("mean", 32)
    assert mse.formula == "sum_ij (p_ij - t_ij)^2 / 32  (mean over all 32 elements)" and mse.asymmetric is False
    each = _derived("loss", "smooth_l1_loss", {"reduction": "none", "beta": 0.5}, ("p", (4, 8), "fp32"),
                    ("t", (4, 8), "fp32"))
    assert each.reduction is None and each.output_shape == (4, 8) and "beta=0.5" in (each.formula or "")
    bad = _derived("loss", "l1_loss", {"reduction": "max"}, ("p", (4, 8), "fp32"), ("t", (4, 8), "fp32"))
    assert "reduction='max' is not one of mean, sum, batchmean, none" in bad.unknown["reduction"]


def test_kl_div_names_its_direction_and_asks_about_a_mean():
    c = _derived("loss", "kl_div", {"reduction": "mean", "input_transform": "log", "log_target": False},
                 ("q", (4, 8), "fp32"), ("p", (4, 8), "fp32"))
    assert c.asymmetric is True and c.direction == "KL(p || q)"
    assert "divides by the element count" in c.unknown["reduction"]
    batch = _derived("loss", "kl_div", {"reduction": "batchmean", "input_transform": "log", "log_target": False},
                     ("q", (4, 8), "fp32"), ("p", (4, 8), "fp32"))
    assert batch.reduction is not None and (batch.reduction.scaling, batch.reduction.count) == ("batchmean", 4)
    assert "reduction" not in batch.unknown


def test_only_a_written_out_hinge_broadcasts_its_inputs():
    hinge = _derived("loss", "hinge_loss", {"reduction": "mean", "margin": 1.0}, ("p", (4, 8), "fp32"),
                     ("t", (8,), "fp32"))
    assert hinge.reduction is not None and hinge.reduction.count == 32 and "output_shape" not in hinge.unknown
    assert "t_j" in (hinge.formula or "")  # the broadcast operand indexed by the letters it has
    mse = _derived("loss", "mse_loss", {"reduction": "mean"}, ("p", (4, 8), "fp32"), ("t", (8,), "fp32"))
    assert mse.unknown["output_shape"] == "mse_loss of shapes (4, 8) and (8,) broadcasts"
