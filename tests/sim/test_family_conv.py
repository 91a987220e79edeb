"""Convolutions and pooling through the real compiler: every fixture verifies against torch at reduced
shapes (same seed, same weights: ModelNew builds the task's own module), blocks of output rows with a
shifted last block verify too, and kernels with a tap dropped, or with other weights, fail."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import tiered

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.design_runs import cost_job
from pypto_tui.sim.runner import run_one
from pypto_tui.sim.verification import prepare_verify, verify_many

CONV = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv"
# CI verifies two convs (grouped and strided; depthwise on flat planes) and one pool (padded 1-D
# average); the depthwise-separable
# chain, the transposed convs, the 3-D and ceil-mode pools repeat the family at 30-45 compile-seconds
# each and run with -m exhaustive (CI's 20 minutes on two cores do not hold them all: the suite took
# 29 minutes with them).
IN_CI = {"conv2d_grouped_strided.py", "avgpool1d_padded.py", "conv2d_depthwise_flat.py"}


CONVS = sorted(p.name for p in CONV.glob("conv*.py"))
POOLS = sorted(p.name for p in CONV.glob("*pool*.py"))
pytestmark = pytest.mark.sim


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(CONV / name), **design))


def _check(names, reports):
    for name, r in zip(names, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err is not None and r.max_abs_err < 1e-4, (name, r.max_abs_err)


# One test per fixture, so that the two xdist workers share them out (as one test, the
# convolutions alone kept a worker busy for 4.5 minutes).
@pytest.mark.parametrize("name", tiered(CONVS, IN_CI))
def test_convolutions_verify_against_torch(kb, name):
    _check([name], verify_many([pipe(kb, name)], jobs=1, cache=False))


@pytest.mark.parametrize("name", tiered(POOLS, IN_CI))
def test_pools_verify_against_torch(kb, name):
    _check([name], verify_many([pipe(kb, name)], jobs=1, cache=False))


@pytest.mark.parametrize("name", ["avgpool1d_padded.py", *tiered(["conv2d_grouped_strided.py",
                                                                 "conv_transpose1d_dilated.py"], set())])
def test_blocks_of_rows_with_a_shifted_last_block_verify(kb, name):
    """Three blocks of rows that do not divide the rows: the last block starts at rows - block. (A
    2-D pool strided along its rows takes one row per iteration, whatever count is asked for.)"""
    reports = verify_many([pipe(kb, name, loop_count=3)], jobs=1, cache=False)
    _check([name], reports)
    # the design's three blocks; the test shape keeps a loop (a 1-D pool's shorter row: two blocks there)
    assert reports[0].design_loop_count == 3 and reports[0].loop_count is not None and reports[0].loop_count >= 2


def _broken(kb, name: str, old: str, new: str) -> J.SimResult:
    prep = prepare_verify(pipe(kb, name))
    assert prep.job is not None
    src = prep.job.kernel_source
    assert src.count(old) == 1, old
    job = replace(prep.job, kernel_source=src.replace(old, new), label=f"broken {name}")
    return run_one(job, cache=False)


def test_a_conv_with_one_tap_dropped_fails(kb):
    r = _broken(kb, "conv1d_dilated_strided.py", "taps.append(pypto.reshape(win, [CG, 1, BLOCK]))",
                "taps.append(pypto.reshape(win * (0.0 if t == TAPS - 1 else 1.0), [CG, 1, BLOCK]))")
    assert r.status == J.MISMATCH and r.passed is False


def test_a_flat_depthwise_conv_with_every_tap_weighted_as_the_first_fails(kb):
    """CONV.depthwise-flat: the channels' weight for tap t, not tap 0's for every tap."""
    r = _broken(kb, "conv2d_depthwise_flat.py", "pypto.view(w, [C, 1, 1], [0, t, 0])",
                "pypto.view(w, [C, 1, 1], [0, 0, 0])")
    assert r.status == J.MISMATCH and r.passed is False


def test_a_row_strided_2d_pool_verifies_one_output_row_per_iteration(kb):
    """POOL.depth-slices for 2-D: avg_pool2d(x, 5) takes one output row per iteration, each tap's row at a
    scalar offset (no gather along the rows), and verifies at every pass with the design kept; the same
    kernel reading the row after the window's misses (a row offset ignored) fails."""
    p = pipe(kb, "avgpool2d_functional.py")
    src = kernel_of(p).source
    assert "ROWS = 1\n" in src and "keep_h" not in src
    r = verify_many([p], jobs=1, cache=False)[0]
    _check(["avgpool2d_functional.py"], [r])
    assert r.design_kept and not r.missing_passes and r.first_failing_pass is None
    out_rows = (r.shapes["x"][2] - 5) // 5 + 1
    assert r.loop_count == out_rows  # one iteration per output row at the test shape
    broken = _broken(kb, "avgpool2d_functional.py", "[plane, r0 * 5 + TAP_H[t], TAP_W[t]]",
                     "[plane, r0 * 5 + TAP_H[t] // 2, TAP_W[t]]")
    assert broken.status == J.MISMATCH and broken.passed is False


def test_a_pool_with_one_tap_dropped_fails(kb):
    r = _broken(kb, "avgpool1d_padded.py", "for t in range(TAPS):", "for t in range(TAPS - 1):")
    assert r.status == J.MISMATCH and r.passed is False


def test_a_pointwise_stage_reading_the_first_image_for_every_image_fails(kb):
    """The depthwise-separable chain's second kernel must take each image's own channels."""
    r = _broken(kb, "conv2d_depthwise_separable.py", "[C, BLOCK], [img * C, r0 * UNIT]", "[C, BLOCK], [0, r0 * UNIT]")
    assert r.status == J.MISMATCH and r.passed is False


def test_other_weights_than_models_fail(kb):
    """verify compares like with like: a ModelNew whose conv draws other weights does not pass."""
    r = _broken(kb, "conv1d_dilated_strided.py", "        self.conv1d = nn.Conv1d(",
                "        torch.manual_seed(1234)\n        self.conv1d = nn.Conv1d(")
    assert r.status == J.MISMATCH and r.passed is False


def test_a_design_compiles_at_the_tasks_full_shape(kb):
    p = pipe(kb, "conv2d_same_asymmetric.py")
    assert kernel_of(p).supported
    r = run_one(cost_job(p, "full shape"), cache=False)
    assert r.status == J.OK and r.e2e_us is not None and r.e2e_us > 0


def test_a_stride_one_conv_verifies_in_the_flat_form_and_one_reading_image_0_fails(kb):
    """CONV.flat-taps through the compiler: the padded, dilated stride-1 conv reads its planes flat and
    verifies at every pass, the design kept; the same kernel reading the first image's planes for
    every image fails."""
    name = "conv2d_same_asymmetric.py"
    p = pipe(kb, name)
    assert "pypto.view(xf, [CG, 1, SPAN]" in kernel_of(p).source
    r = verify_many([p], jobs=1, cache=False)[0]
    _check([name], [r])
    assert r.design_kept and not r.missing_passes and r.first_failing_pass is None
    broken = _broken(kb, name, "[CG, 1, SPAN], [img * c + g * CG, 0,", "[CG, 1, SPAN], [g * CG, 0,")
    assert broken.status == J.MISMATCH and broken.passed is False
