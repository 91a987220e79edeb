"""A 2-D average pool strided along W takes W on the cube (POOL.band-matmul): every input row times a
band (W x OWP) holding 1/count over each output column's window, stored H-padded, then a sum of
plain row views takes H. Fast tests read the plan and the generated text; the compiler tests verify
banded pools (padding on both axes, a tail block of planes) and catch a band that forgets the
padding and row views at the wrong offset."""

from __future__ import annotations

import pytest
from family import CONV, module_task, window_plan
from support import CI_AND_REST, part

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many


def test_average_pools_strided_along_w_with_a_constant_divisor_take_the_band(kb, tmp_path):
    plan = window_plan(kb, CONV / "avgpool2d_functional.py")  # kernel 5, stride 5
    assert plan.band_matmul and plan.band_width % 8 == 0 and plan.band_width >= plan.axes[1].out
    assert not any(plan.gathers(i) for i in range(2))
    assert plan.band_matmul_shape == (plan.band_planes * 66, 99, plan.band_width)
    padded = window_plan(kb, module_task(tmp_path, "AvgPool2d(3, stride=2, padding=1)", (2, 4, 16, 40)))
    assert padded.band_matmul
    # a count map (the padding does not count), stride 1 along W, a max, other ranks: the taps
    assert not window_plan(kb, CONV / "avgpool2d_exclude_pad.py").band_matmul
    assert not window_plan(kb, module_task(tmp_path, "AvgPool2d(3, stride=(2, 1))", (2, 4, 16, 40))).band_matmul
    assert not window_plan(kb, CONV / "maxpool2d_ceil.py").band_matmul
    assert not window_plan(kb, CONV / "avgpool1d_padded.py").band_matmul
    assert not window_plan(kb, CONV / "avgpool3d_asymmetric.py").band_matmul


def test_the_band_kernel_multiplies_rows_and_the_taps_kernel_reads_plain_rows(kb):
    src = kernel_of(Pipeline(kb, Design(task=str(CONV / "avgpool2d_functional.py")))).source
    band = src[src.index("def create_avg_pool2d_band_kernel"):src.index("def create_avg_pool2d_kernel")]
    assert "pypto.matmul(rows_chunk, band, pypto.DT_FP32, b_trans=False)" in band
    assert "pypto.arange(float(LO_W), float(LO_W + w))" in band
    assert "x_rows: pypto.Tensor((n * c * h, w)" in band and "out: pypto.Tensor((n * c, QH, OWP)" in band
    taps = src[src.index("def create_avg_pool2d_kernel"):]
    assert "index_select" not in src and "TAP_W" not in src
    assert "pypto.view(xq, [PLANES, ROWS, OW], [plane, r0 * 5 + t, 0])" in taps
    assert "for t in range(KERNEL[0]):" in taps and "INV_COUNT" not in taps  # the band holds the divisor
    assert "x_rows = x.reshape(n * c * h, w).contiguous()" in src


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_banded_pools_verify_with_padding_and_a_tail_block(kb, tmp_path, which):
    tasks = [  # 1500 rows a plane: two planes a matmul, 3 planes leave a tail block of one
        module_task(tmp_path, "AvgPool2d((2, 4), stride=(2, 3), padding=(1, 2))", (1, 3, 1500, 16)),
        str(CONV / "avgpool2d_functional.py"),
        module_task(tmp_path, "AvgPool2d(3, stride=2, padding=1)", (2, 5, 24, 40))]
    pipes = [Pipeline(kb, Design(task=t)) for t in part(tasks, which)]
    assert which == "rest" or "TAIL > 0" in kernel_of(pipes[0]).source
    for p in pipes:
        assert "create_avg_pool2d_band_kernel" in kernel_of(p).source
    for r in verify_many(pipes, jobs=1, cache=False):
        assert r.supported and r.passed, r.reason
        assert r.max_abs_err is not None and r.max_abs_err < 1e-5


@pytest.mark.sim
def test_a_band_without_the_padding_or_rows_at_the_wrong_offset_fail(kb, tmp_path, broken_twins):
    pipe = Pipeline(kb, Design(task=module_task(tmp_path, "AvgPool2d(3, stride=2, padding=1)", (2, 5, 24, 40))))
    reports = broken_twins([
        (pipe, "pypto.arange(float(LO_W), float(LO_W + w))", "pypto.arange(0.0, float(w))"),
        (pipe, "[plane, r0 * 2 + t, 0]", "[plane, r0 * 2, 0]"),
    ])
    for r in reports:
        assert r.status == J.MISMATCH and r.passed is False, (r.status, r.reason)
