"""Scaled dot-product attention (ATTN.sdpa): two batched matmuls with their own cube tiles
(ATTN.reset-cube-tiles) and a fp32 softmax; an odd sequence length, cross attention in fp16 with
a given scale; scaffolded, lint-clean, verified, a broken twin caught."""

from __future__ import annotations

import pytest
from family import EXTRA, pipe

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

SDPA = ["sdpa_odd_len.py", "sdpa_cross_fp16.py"]



@pytest.mark.parametrize("name", SDPA)
def test_attention_scaffolds_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "attention", k.reason
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_each_matmul_gets_its_own_cube_tiles_set_right_before_it(kb):
    p = pipe(kb, "sdpa_cross_fp16.py")
    plan = p.kernel_plan()
    assert (plan.cube.M, plan.cube.K, plan.cube.N) == (37, 32, 64)  # scores: S x D x T
    (role, values), = plan.more_cubes
    assert role == "values" and (values.M, values.K, values.N) == (37, 64, 40)  # S x T x E
    src = kernel_of(p).source
    first, second = src.index("pypto.set_cube_tile_shapes(CUBE_M"), src.index("pypto.set_cube_tile_shapes(VALUES_")
    scores, probs = src.index("pypto.matmul(query, key"), src.index("probs = ")
    assert first < scores < probs < second < src.index("pypto.matmul(probs")


def test_half_precision_keeps_the_softmax_and_second_product_in_fp32(kb):
    src = kernel_of(pipe(kb, "sdpa_cross_fp16.py")).source
    assert "pypto.matmul(query, key, pypto.DT_FP32, b_trans=True) * SCALE" in src
    assert "pypto.cast(pypto.matmul(probs, pypto.cast(value, pypto.DT_FP32), pypto.DT_FP32), pypto.DT_FP16)" in src
    assert "create_sdpa_kernel(bh, s, t, d, e, 0.125)" in src  # the task's scale
    assert "SCALE = d ** (-0.5)" in kernel_of(pipe(kb, "sdpa_odd_len.py")).source  # torch's default


def test_batch_and_heads_are_one_batch_in_forward(kb):
    p = pipe(kb, "sdpa_odd_len.py")
    assert p.dims().strategy == "attention-3d" and p.dims().kernel_shapes[0] == (6, 37, 24)
    src = kernel_of(p).source
    assert "q_3d = q.reshape(-1, q.shape[-2], q.shape[-1]).contiguous()" in src
    assert "return out.reshape(q.shape[0], q.shape[1], s, e)" in src


def test_masks_dropout_and_causal_attention_say_why_they_are_not_scaffolded(kb):
    for edit, why in (({"op_args.dropout_p": 0.1}, "dropout"), ({"op_args.is_causal": True}, "causal")):
        p = Pipeline(kb, Design(task=str(EXTRA / "sdpa_odd_len.py"), contract_edits=edit))
        assert not kernel_of(p).supported and why in kernel_of(p).reason


@pytest.mark.sim
def test_attention_verifies_against_torch(kb):
    reports = verify_many([pipe(kb, n) for n in SDPA], jobs=1, cache=False)
    for name, r in zip(SDPA, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err < 1e-4, (name, r.max_abs_err)


@pytest.mark.sim
def test_attention_without_the_scale_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, "sdpa_odd_len.py"), "b_trans=True) * SCALE", "b_trans=True)")])
    assert r.status == J.MISMATCH and r.passed is False
