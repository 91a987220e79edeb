"""The numpy reference, against numbers worked out by hand (no torch needed)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.reference import NoReference, reference
from pypto_tui.contract.selfcheck import make_inputs, scale_map
from pypto_tui.contract.semantics import norm_axes

EXTRA = Path(__file__).resolve().parent.parent / "fixtures" / "tasks_extra"


def test_kl_batchmean_is_kl_target_pred_over_batch(contracts):
    p = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    t = np.array([[0.4, 0.6], [0.3, 0.7], [0.5, 0.5]])
    want = np.sum(t * (np.log(t) - np.log(p))) / 3
    got = reference(contracts["kl_div_batchmean"], [p, t])
    assert got.shape == () and math.isclose(float(got), want, rel_tol=1e-12)
    swapped = reference(contracts["kl_div_batchmean"], [t, p])
    assert not math.isclose(float(swapped), want)  # KL is not symmetric


def test_mean_is_sum_over_count_of_the_arrays(contracts):
    x = np.arange(2 * 3 * 4 * 5, dtype=float).reshape(2, 3, 4, 5)
    got = reference(contracts["mean_spatial"], [x])
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got, x.sum(axis=(2, 3)) / 20)


def test_keepdim_shapes(contracts):
    x = np.ones((2, 3, 4, 5))
    assert reference(contracts["sum_over_channels"], [x]).shape == (2, 1, 4, 5)
    assert reference(contracts["max_over_dim"], [np.ones((2, 3, 4))]).shape == (2, 4)


def test_group_norm_statistics_per_group(contracts):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2, 64, 3, 3))
    y = reference(contracts["group_norm"], [x])
    g = y.reshape(2, 8, -1)
    np.testing.assert_allclose(g.mean(axis=2), 0, atol=1e-12)
    np.testing.assert_allclose(g.var(axis=2), 1, rtol=1e-3)


def test_triplet_margin_by_hand(contracts):
    a = np.array([[0.0, 0.0]])
    p = np.array([[3.0, 4.0]])  # d(a, p) = 5
    n = np.array([[1.0, 0.0]])  # d(a, n) = 1
    got = float(reference(contracts["triplet_margin"], [a, p, n]))
    assert math.isclose(got, 5.0 - 1.0 + 1.0, rel_tol=1e-5)  # eps shifts the distances a hair
    assert float(reference(contracts["triplet_margin"], [a, n, p])) == 0.0


def test_matmul_transposed_b(contracts):
    A = np.arange(6.0).reshape(2, 3)
    B = np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(reference(contracts["matmul_transposed_b"], [A, B]), A @ B.T)


def test_scalar_mul_uses_the_scalar_input(contracts):
    A = np.ones((2, 2))
    np.testing.assert_allclose(reference(contracts["scalar_mul_large"], [A]), 3.14)
    np.testing.assert_allclose(reference(contracts["scalar_mul_large"], [A], {"s": 2.0}), 2.0)


def test_elu_and_softmax(contracts):
    x = np.array([[-1.0, 0.0, 2.0]])
    np.testing.assert_allclose(reference(contracts["elu"], [x]), [[math.exp(-1) - 1, 0.0, 2.0]])
    sm = reference(contracts["softmax_rows"], [x])
    np.testing.assert_allclose(sm.sum(axis=1), 1.0)


def test_unsupported_families_have_no_reference(kb):
    c = extract_contract(EXTRA / "conv2d_module.py", kb)
    with pytest.raises(NoReference):
        reference(c, [np.ones((1, 3, 4, 4))])


def test_wrong_number_of_arrays(contracts):
    with pytest.raises(ValueError, match="takes 2 arrays"):
        reference(contracts["mse_loss"], [np.ones(3)])


RANK_AND_DIMS = st.integers(1, 6).flatmap(
    lambda r: st.tuples(st.just(r), st.lists(st.integers(-r, r - 1), min_size=1, max_size=r)))


@given(RANK_AND_DIMS)
def test_norm_axes_are_non_negative_and_sorted(case):
    rank, dims = case
    axes = norm_axes(tuple(dims), rank)
    assert axes == tuple(sorted({d % rank for d in dims}))


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 5000), min_size=1, max_size=4))
def test_scale_map_keeps_sizes_distinct_and_small(shape):
    from dataclasses import replace

    from pypto_tui.contract.model import Contract, Input

    c = Contract(task_path=None, family="elementwise", op="relu", supported=True, reason="",
                 inputs=(Input("x", "tensor", tuple(shape), "fp32",
                               recipe={"fn": "randn", "shape": tuple(shape), "post": ()}),))
    m = scale_map(c)
    vals = sorted(set(shape))
    assert len({m[v] for v in vals}) == len(vals)  # distinct stay distinct: a swapped axis shows
    assert all(m[v] <= v for v in vals)
    arrays, _shapes, replayed = make_inputs(replace(c))
    assert arrays[0].ndim == len(shape) and replayed


def _as(c, op, **op_args):
    """The contract `c` with another op (and op_args), its derived fields recomputed."""
    from dataclasses import replace

    from pypto_tui.contract.semantics import derive

    return derive(replace(c, op=op, op_args={**c.op_args, **op_args}))


def test_anchor_ops_the_graph_reader_does_not_spell_have_their_registry_reference(contracts):
    """nansum, the scans with values only (cummax) and the written-out hinge are registry kinds without a
    torch spelling: the contract's reference is still theirs, worked out by hand here."""
    x = np.array([[1.0, np.nan, 3.0], [np.nan, 2.0, -1.0]])
    got = reference(_as(contracts["sum_over_channels"], "nansum", dim=1, keepdim=True), [x])
    np.testing.assert_allclose(got, [[4.0], [1.0]])
    p, t = np.array([[0.5, -2.0], [1.5, 0.2]]), np.array([[1.0, 1.0], [-1.0, 1.0]])
    hinge = reference(_as(contracts["mse_loss"], "hinge_loss"), [p, t])
    assert math.isclose(float(hinge), (0.5 + 3.0 + 2.5 + 0.8) / 4)
    y = np.array([[[3.0, 1.0], [2.0, 4.0]], [[0.0, 5.0], [-1.0, 6.0]]])
    np.testing.assert_allclose(reference(_as(contracts["max_over_dim"], "min", dim=1), [y]), [[2.0, 1.0], [-1.0, 5.0]])


def test_scan_forms_wrap_the_registry_scan(kb):
    c = extract_contract(EXTRA / "cumsum_reverse_last.py", kb)
    x = np.array([[1.0, 3.0, 2.0, 5.0]])
    np.testing.assert_allclose(reference(_as(c, "reverse_cummax", dim=1), [x]), [[5.0, 5.0, 5.0, 5.0]])
    np.testing.assert_allclose(reference(_as(c, "cummin", dim=1), [x]), [[1.0, 1.0, 1.0, 1.0]])
    lcse = reference(_as(c, "logcumsumexp", dim=1), [x])
    np.testing.assert_allclose(lcse, [[math.log(sum(math.exp(v) for v in x[0, :i + 1])) for i in range(4)]])


def test_a_matmul_masked_by_tril_keeps_its_diagonal_offset(contracts):
    A, B = np.arange(9.0).reshape(3, 3), np.eye(3)
    c = _as(contracts["matmul_tall"], "matmul", post="tril", post_diagonal=-1)
    np.testing.assert_allclose(reference(c, [A, B]), [[0, 0, 0], [3, 0, 0], [6, 7, 0]])
