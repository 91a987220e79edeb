"""A 3-D pool stores its strided H and W axes by stride phase (POOL.phase-split): the pre kernel
gathers each phase of a block of planes once, every tap of the pool kernel is then a plain view.
Fast tests read the plan, the generated text and the segment helper (every prepared position written
exactly once); the compiler tests verify three 3-D pools and catch a view of the wrong phase and a
phase stored at the wrong place."""

from __future__ import annotations

import re

import pytest
from family import CONV, module_task, window_plan
from support import CI_AND_REST, part

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many


def _source(kb, name: str) -> str:
    return kernel_of(Pipeline(kb, Design(task=str(CONV / name)))).source


def test_the_strided_axes_after_the_first_of_a_3d_pool_are_phase_split(kb):
    plan = window_plan(kb, CONV / "maxpool3d.py")  # kernel 3, stride 2, padding 1
    assert [plan.phases(i) for i in range(3)] == [False, True, True]
    assert not any(plan.gathers(i) for i in range(3))
    for i in (1, 2):
        a = plan.axes[i]
        assert a.prepared % a.step == 0 and plan.view_extent(i) == a.out
    assert plan.axes[2].prepared % 8 == 0  # the pre kernel's tile takes W whole: 32-byte rows
    mixed = window_plan(kb, CONV / "avgpool3d_asymmetric.py")  # stride (2, 2, 1): W is read as it is
    assert [mixed.phases(i) for i in range(3)] == [False, True, False]
    # a 2-D pool splits both strided axes, its rows too (no depth slices: blocks of rows read plain
    # views); a 1-D pool keeps its gather
    flat = window_plan(kb, CONV / "maxpool2d_ceil.py")  # stride (2, 3)
    assert [flat.phases(i) for i in range(2)] == [True, True] and not flat.depth_slices
    assert not any(flat.gathers(i) for i in range(2))
    assert not window_plan(kb, CONV / "maxpool1d_dilated.py").phases(0)


def test_the_pool_kernel_reads_plain_views_and_the_pre_kernel_gathers_each_phase(kb):
    src = _source(kb, "maxpool3d.py")
    pool = src[src.index("def create_max_pool3d_kernel"):]
    assert "index_select" not in pool
    assert "(TAP_H[t] % 2) * PH + TAP_H[t] // 2" in pool and "(TAP_W[t] % 2) * PW + TAP_W[t] // 2" in pool
    assert "xq: pypto.Tensor((n * c, QD, 2 * PH, 2 * PW)" in pool
    prep = src[src.index("def create_max_pool3d_prepare_kernel"):src.index("def create_max_pool3d_kernel")]
    assert "part = pypto.index_select(part, 2, keep_h[j_h])" in prep
    assert "part = pypto.index_select(part, 3, keep_w[j_w])" in prep
    assert "FIRST_H, COUNT_H, AT_H, FILL_AT_H, FILL_WIDTH_H = phase_segments(h, LO_H, 2, PH)" in prep
    assert "= phase_segments(d, LO_D, 1, QD)" in prep  # the depth is a plain axis: one phase


def _segments(kb):
    src = _source(kb, "maxpool3d.py")
    start = src.index("def phase_segments")
    namespace: dict = {}
    exec(src[start:src.index("\n\n\n", start)], namespace)  # our own generated helper
    return namespace["phase_segments"]


def test_every_prepared_position_is_written_once_and_each_input_lands_at_its_phase(kb):
    segments = _segments(kb)
    for size in (1, 2, 5, 16, 17):
        for lo in (0, 1, 2, 3):
            for stride in (1, 2, 3):
                q = lo + size + 2
                length = -(-q // stride)
                first, count, at, fill_at, fill_width = segments(size, lo, stride, length)
                written = [0] * (stride * length)
                for f, n, a in zip(first, count, at, strict=True):
                    for k in range(n):
                        x = f + k * stride  # input position -> its padded position's phase place
                        padded = x + lo
                        assert a + k == (padded % stride) * length + padded // stride
                        written[a + k] += 1
                assert sum(count) == size
                for a, w in zip(fill_at, fill_width, strict=True):
                    assert w > 0
                    for p in range(a, a + w):
                        written[p] += 1
                assert written == [1] * (stride * length), (size, lo, stride)


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_phase_split_pools_verify_with_a_tail_block(kb, tmp_path, which):
    """Stride 3 with dilation 2 (three phases, taps in every phase) over 9 planes: a block of 8 and a
    tail block of 1; and the avg pool fixture whose W is read plain."""
    task = module_task(tmp_path, "MaxPool3d(3, stride=3, padding=1, dilation=2)", (1, 9, 7, 13, 17))
    pipes = part([Pipeline(kb, Design(task=task)), Pipeline(kb, Design(task=str(CONV / "avgpool3d_asymmetric.py")))],
                 which)
    assert which == "rest" or "TAIL > 0" in kernel_of(pipes[0]).source
    for r in verify_many(pipes, jobs=1, cache=False):
        assert r.supported and r.passed, r.reason
        assert r.max_abs_err is not None and r.max_abs_err < 1e-5


@pytest.mark.sim
def test_a_view_of_the_wrong_phase_or_a_phase_stored_at_the_wrong_place_fails(kb, broken_twins):
    pipe = Pipeline(kb, Design(task=str(CONV / "maxpool3d.py")))
    source = kernel_of(pipe).source
    assert re.search(r"AT_W\[j_w\]\]", source)
    reports = broken_twins([
        (pipe, "(TAP_W[t] % 2) * PW + TAP_W[t] // 2", "(TAP_W[t] % 2) * PW + TAP_W[t] // 2 * 0"),
        (pipe, "pypto.assemble(part, [off, AT_D[j_d], AT_H[j_h], AT_W[j_w]], out)",
         "pypto.assemble(part, [off, AT_D[j_d], AT_H[j_h], AT_W[0]], out)"),
    ])
    for r in reports:
        assert r.status == J.MISMATCH and r.passed is False, (r.status, r.reason)


def test_a_2d_pool_reads_blocks_of_rows_from_its_phases(kb, tmp_path):
    src = kernel_of(Pipeline(kb, Design(task=module_task(tmp_path, "MaxPool2d(3, stride=2, padding=1)",
                                                      (3, 5, 27, 40))))).source
    pool = src[src.index("def create_max_pool2d_kernel"):]
    assert "[PLANES, ROWS, OW], [plane, (TAP_H[t] % 2) * PH + TAP_H[t] // 2 + r0, (TAP_W[t] % 2) * PW" in pool
    assert "index_select" not in pool and "ROWS = 1\n" not in src


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_2d_pools_split_by_phase_on_both_axes_verify(kb, tmp_path, which):
    """Stride 2 on both axes over 15 planes (a block of 8 and one shifted back), stride (2, 1) (the
    rows alone), and the ceil_mode fixture (stride (2, 3), dilation (2, 1))."""
    tasks = [module_task(tmp_path, "MaxPool2d(3, stride=2, padding=1)", (3, 5, 27, 40)),
             module_task(tmp_path, "AvgPool2d((3, 2), stride=(2, 1), padding=(1, 0))", (3, 5, 27, 40)),
             str(CONV / "maxpool2d_ceil.py")]
    for r in verify_many([Pipeline(kb, Design(task=t)) for t in part(tasks, which)], jobs=1, cache=False):
        assert r.supported and r.passed, r.reason
        assert r.max_abs_err is not None and r.max_abs_err < 1e-5


@pytest.mark.sim
def test_a_row_of_the_wrong_phase_fails(kb, tmp_path, broken_twins):
    pipe = Pipeline(kb, Design(task=module_task(tmp_path, "MaxPool2d(3, stride=2, padding=1)", (3, 5, 27, 40))))
    [report] = broken_twins([(pipe, "(TAP_H[t] % 2) * PH + TAP_H[t] // 2 + r0", "TAP_H[t] // 2 + r0")])
    assert report.status == J.MISMATCH and report.passed is False, (report.status, report.reason)
