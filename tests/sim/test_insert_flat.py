"""A strided transposed conv puts its zeros in over the whole input, one axis at a time, before the
padding (CONV.insert-matmul, CONV.insert-rows): the last axis by a matmul with a spread matrix, each
axis before it by zero rows appended to each row of a flat view; the pad-blocks kernel then pads
blocks of planes. Fast tests read the plan and the generated text; the compiler tests verify the
chain in one, two and three dimensions and catch a misplaced spread and a misplaced zero slab."""

from __future__ import annotations

import pytest
from family import CONV, module_task, window_plan
from support import CI_AND_REST, part

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TWO_D = ("ConvTranspose2d(6, 4, 3, stride=(2, 3), padding=1, output_padding=1)", (2, 6, 10, 16))
ONE_D = ("ConvTranspose1d(8, 12, 4, stride=3, padding=2)", (2, 8, 200))
THREE_D = ("ConvTranspose3d(4, 6, 3, stride=2, padding=1, groups=2)", (2, 4, 3, 5, 8))
ROWS_ONLY = ("ConvTranspose2d(4, 4, 3, stride=(2, 1), padding=1)", (2, 4, 6, 20))


def test_strided_transposed_convs_insert_flat_and_pad_in_blocks(kb, tmp_path):
    two = window_plan(kb, module_task(tmp_path, *TWO_D))
    assert two.inserts_flat and two.inserts_by_matmul and two.pads_in_blocks and two.insert_block == 16
    one = window_plan(kb, module_task(tmp_path, *ONE_D))  # 200 = 8 x 25: rows of 8 elements
    assert one.inserts_by_matmul and one.insert_block == 8
    assert one.insert_matmul_shape == (2 * 8 * 200 // 8, 8, 24)
    rows = window_plan(kb, module_task(tmp_path, *ROWS_ONLY))  # W not strided: only zero rows along H
    assert rows.inserts_flat and not rows.inserts_by_matmul
    # a last axis of 20 is read in blocks of 4, under 32 bytes: the plane-by-plane concat stays
    narrow = window_plan(kb, CONV / "conv_transpose2d_strided.py")
    assert not narrow.inserts_flat and not narrow.pads_in_blocks
    assert not window_plan(kb, CONV / "conv2d_grouped_strided.py").inserts_flat  # not transposed


def test_the_chain_reads_the_input_flat_and_hands_the_pad_kernel_inserted_planes(kb, tmp_path):
    src = kernel_of(Pipeline(kb, Design(task=module_task(tmp_path, *TWO_D)))).source
    assert "x_rows = x.reshape(n * c * h * w // block, block).contiguous()" in src
    assert "pypto.matmul(rows_chunk, spread, pypto.DT_FP32, b_trans=False)" in src
    assert "def create_conv_transpose2d_insert_h_kernel" in src
    assert "inserted_h = inserted_h.reshape(n * c, h * STRIDE[0], w * STRIDE[1])" in src
    start = src.index("def create_conv_transpose2d_prepare_kernel")
    prepare = src[start:src.index("def create_conv_transpose2d_kernel")]
    assert "PREP_PLANES" in prepare and "pypto.concat" not in prepare  # pad blocks, no per-plane concat
    assert "inserted_h: pypto.Tensor((n * c, h * STRIDE[0], w * STRIDE[1])" in prepare
    rows = kernel_of(Pipeline(kb, Design(task=module_task(tmp_path, *ROWS_ONLY)))).source
    assert "spread" not in rows and "x_flat = x.reshape(n * c * h * w).contiguous()" in rows


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_flat_insertion_verifies_in_one_two_and_three_dimensions(kb, tmp_path, which):
    cases = part([TWO_D, ONE_D, THREE_D, ROWS_ONLY], which)
    pipes = [Pipeline(kb, Design(task=module_task(tmp_path, *case))) for case in cases]
    for p in pipes:
        assert "_insert" in kernel_of(p).source
    for r in verify_many(pipes, jobs=1, cache=False):
        assert r.supported and r.passed, r.reason
        assert r.max_abs_err is not None and r.max_abs_err < 1e-4


@pytest.mark.sim
def test_a_misplaced_spread_or_zero_slab_fails(kb, tmp_path, broken_twins):
    pipe = Pipeline(kb, Design(task=module_task(tmp_path, *TWO_D)))
    reports = broken_twins([
        (pipe, "pypto.arange(0.0, float(BLOCK * STRIDE[1]), float(STRIDE[1]))",
         "pypto.arange(1.0, float(BLOCK * STRIDE[1] + 1), float(STRIDE[1]))"),
        (pipe, "[off, w * STRIDE[1]], out)", "[off, 0], out)"),
    ])
    for r in reports:
        assert r.status == J.MISMATCH and r.passed is False, (r.status, r.reason)
