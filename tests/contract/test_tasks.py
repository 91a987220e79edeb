"""Every task in tests/fixtures/tasks (copied from the shared reference cases) gives the right
contract and dimension plan. The expectations are written down by hand from the task files."""

from __future__ import annotations

import pytest

from pypto_tui.dims import plan_dims

# task: (family, op, inputs [(name, shape, dtype)], reduction (op, axes, keepdim, scaling) or None,
#        asymmetric, output shape, kernel rank, kernel shape of the first input, reduce_axis)
EXPECTED = {
    "batch_norm": ("norm", "batch_norm", [("x", (16, 64, 256, 256), "fp32")],
                   ("mean_var", (0, 2, 3), True, "mean"), False, (16, 64, 256, 256), 3, (16, 64, 65536), 2),
    "batched_matmul": ("matmul", "bmm", [("A", (128, 128, 256), "fp32"), ("B", (128, 256, 512), "fp32")],
                       None, True, (128, 128, 512), 3, (128, 128, 256), None),
    "elu": ("elementwise", "elu", [("x", (16, 16384), "fp32")], None, False, (16, 16384), 1, (262144,), None),
    "frobenius_scale": ("norm", "frobenius_norm", [("x", (16, 64, 256, 256), "fp32")],
                        ("sum_square", (0, 1, 2, 3), True, "sum"), False, (16, 64, 256, 256), 2, (1024, 65536), 1),
    "group_norm": ("norm", "group_norm", [("x", (16, 64, 256, 256), "fp32")],
                   ("mean_var", (1, 2, 3), True, "mean"), False, (16, 64, 256, 256), 2, (128, 524288), 1),
    "kl_div_batchmean": ("loss", "kl_div", [("predictions", (128, 4096), "fp32"), ("targets", (128, 4096), "fp32")],
                         ("sum", (0, 1), False, "batchmean"), True, (), 2, (128, 4096), 1),
    "matmul_tall": ("matmul", "matmul", [("A", (16384, 1024), "fp32"), ("B", (1024, 1024), "fp32")],
                    None, True, (16384, 1024), 2, (16384, 1024), None),
    "matmul_transposed_b": ("matmul", "matmul", [("A", (1024, 4096), "fp32"), ("B", (2048, 4096), "fp32")],
                            None, True, (1024, 2048), 2, (1024, 4096), None),
    "max_over_dim": ("reduction", "max", [("x", (16, 256, 256), "fp32")],
                     ("max", (1,), False, "none"), False, (16, 256), 3, (16, 256, 256), 1),
    "mean_spatial": ("reduction", "mean", [("x", (16, 64, 128, 128), "fp32")],
                     ("mean", (2, 3), False, "mean"), False, (16, 64), 3, (16, 64, 16384), 2),
    "mse_loss": ("loss", "mse_loss", [("predictions", (128, 4096), "fp32"), ("targets", (128, 4096), "fp32")],
                 ("mean", (0, 1), False, "mean"), False, (), 2, (128, 4096), 1),
    "rms_norm": ("norm", "rms_norm", [("x", (16, 64, 256, 256), "fp32")],
                 ("mean_square", (1,), True, "mean"), False, (16, 64, 256, 256), 3, (16, 64, 65536), 1),
    "scalar_mul_large": ("elementwise", "mul", [("A", (16384, 4096), "fp32"), ("s", None, "fp32")],
                         None, False, (16384, 4096), 1, (67108864,), None),
    "softmax_rows": ("softmax", "softmax", [("x", (16, 16384), "fp32")],
                     ("softmax", (1,), True, "none"), False, (16, 16384), 2, (16, 16384), 1),
    "sum_over_channels": ("reduction", "sum", [("x", (16, 64, 256, 256), "fp32")],
                          ("sum", (1,), True, "sum"), False, (16, 1, 256, 256), 4, (16, 64, 256, 256), 1),
    "triplet_margin": ("loss", "triplet_margin_loss",
                       [(n, (128, 4096), "fp32") for n in ("anchor", "positive", "negative")],
                       ("mean", (0,), False, "mean"), True, (), 2, (128, 4096), 1),
}


def test_every_fixture_has_an_expectation(contracts):
    assert sorted(contracts) == sorted(EXPECTED)


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_contract(task, contracts):
    family, op, inputs, reduction, asym, out_shape, *_ = EXPECTED[task]
    c = contracts[task]
    assert (c.family, c.op) == (family, op)
    assert c.supported, c.reason
    assert [(i.name, i.shape, i.dtype) for i in c.inputs] == inputs
    if reduction is None:
        assert c.reduction is None
    else:
        r = c.reduction
        assert (r.op, r.axes, r.keepdim, r.scaling) == reduction
    assert c.asymmetric is asym
    assert c.output_shape == out_shape
    assert c.formula
    assert not c.unknown


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_dims(task, contracts, kb):
    *_, rank, kernel_shape, reduce_axis = EXPECTED[task]
    plan = plan_dims(contracts[task], kb)
    assert plan.kernel_rank == rank
    assert plan.kernel_shapes[0] == kernel_shape
    assert plan.reduce_axis == reduce_axis
    assert all(f.level != "error" for f in plan.findings)


def test_scalar_input_keeps_its_value(contracts):
    s = contracts["scalar_mul_large"].input("s")
    assert (s.kind, s.value) == ("scalar", 3.14)
    assert contracts["scalar_mul_large"].op_args["scalar_input"] == "s"


def test_kl_div_direction_and_batchmean(contracts):
    c = contracts["kl_div_batchmean"]
    assert c.direction == "KL(targets || predictions)"
    assert c.op_args["input_transform"] == "log"
    assert c.reduction.count == 128  # the batch, not the 524288 elements
    assert "/ 128" in c.formula


def test_mean_counts_the_reduced_axes(contracts):
    assert contracts["mean_spatial"].reduction.count == 128 * 128
    assert contracts["mse_loss"].reduction.count == 128 * 4096
    assert contracts["triplet_margin"].reduction.count == 128


def test_triplet_is_two_phase(contracts):
    r = contracts["triplet_margin"].reduction
    assert (r.inner_op, r.inner_axes) == ("pairwise_distance", (1,))
    assert contracts["triplet_margin"].op_args["margin"] == 1.0


def test_init_params_are_bound(contracts):
    assert dict(contracts["group_norm"].init_params) == {"num_features": 64, "num_groups": 8}
    assert dict(contracts["max_over_dim"].init_params) == {"dim": 1}
    assert dict(contracts["rms_norm"].init_params) == {"num_features": 64, "eps": 1e-5}
    gn = contracts["group_norm"].attributes["gn"]
    assert gn == {"type": "GroupNorm", "num_groups": 8, "num_channels": 64, "eps": 1e-5, "affine": True}
    assert contracts["triplet_margin"].attributes["loss_fn"]["margin"] == 1.0


def test_noise_comment_is_reported(contracts):
    msgs = [f.message for f in contracts["max_over_dim"].findings if f.rule == "P1.fixed-params"]
    assert any("dataset noise" in m for m in msgs)


def test_transposed_b_is_read_from_the_call(contracts, kb):
    c = contracts["matmul_transposed_b"]
    assert c.op_args["transpose_b"] is True and c.op_args["transpose_a"] is False
    plan = plan_dims(c, kb)
    assert plan.matmul == {"m": 1024, "k": 4096, "n": 2048, "batch": None, "a_trans": False, "b_trans": True}
    assert plan.kernel_shapes == [(1024, 4096), (2048, 4096)]  # B as stored: b_trans


def test_dims_examples_from_the_rules(contracts, kb):
    assert plan_dims(contracts["elu"], kb).forward_reshape == [(262144,)]
    gn = plan_dims(contracts["group_norm"], kb)
    assert gn.forward_reshape == [(128, 524288)] and gn.strategy == "group-norm-2d"
    ms = plan_dims(contracts["mean_spatial"], kb)
    assert ms.merged_axes == [[2, 3]] and ms.output_kernel_shape == (16, 64)
    assert "adjacent" in ms.merge_reason
    soc = plan_dims(contracts["sum_over_channels"], kb)
    assert soc.forward_reshape == [None] and soc.output_kernel_shape == (16, 1, 256, 256)
    kl = plan_dims(contracts["kl_div_batchmean"], kb)
    assert kl.output_kernel_shape == (1, 1) and kl.output_reshape == ()  # one value, as the kernel writes it
    tri = plan_dims(contracts["triplet_margin"], kb)
    assert tri.strategy == "per-sample-loss-2d" and tri.reduce_axes == [0, 1]
    sm = plan_dims(contracts["scalar_mul_large"], kb)
    assert sm.forward_reshape == [(67108864,), None] and sm.kernel_shapes == [(67108864,)]
