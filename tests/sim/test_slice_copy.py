"""SLICE.rows-copy on the compiler: a linear's output chunked into a value and a gate (two copy kernels
reading their column blocks), and a class token picked with x[:, 0], verify every element and every
pass row with their designs kept; a module whose copy reads the wrong block fails."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest
from support import tiered

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = pytest.mark.sim

CHAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"
PLANTS = {
    # the value chunk read from the gate's columns: b * sigmoid(b) instead of a * sigmoid(b)
    "glu_split.py": (r"col = 0 \* inner", "col = 512 * inner"),
    # the second token's features instead of the first's
    "cls_head.py": (r"col = 0 \* inner", "col = 1 * inner"),
}


@pytest.mark.parametrize("name", tiered(PLANTS, set()))  # CI: test_traced_verify's attention plants one
def test_copied_parts_verify_and_a_copy_of_the_wrong_block_fails(kb, name: str) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(CHAIN / name))))
    assert prepared.job is not None, prepared.report.reason
    assert prepared.report.design_kept, prepared.report.notes
    source = prepared.job.kernel_source
    pattern, planted_text = PLANTS[name]
    assert len(re.findall(pattern, source)) == 1 and "create_slice_kernel" in source
    planted = replace(prepared.job, kernel_source=re.sub(pattern, planted_text, source))
    clean, broken = run_many([prepared.job, planted], jobs=2, timeout_s=900, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and not ok.missing_passes and len(ok.passes_checked) >= 7, ok.reason
    assert ok.kernels_run == ok.kernels >= 3
    assert not bad.passed and "elements" in bad.reason, bad.reason


MOVES = {
    # the W pad's data written one column block early: the first border is short, the data shifted
    "pad_borders.py": (r"lo = 3 \* inner", "lo = 2 * inner", "create_pad_kernel"),
    # the third copy (x1's W phase) reads the odd columns instead of the even ones
    "patch_merge.py": (r"col = 1 \* inner", "col = 0 * inner", "create_slice_kernel"),
}


@pytest.mark.parametrize("name", tiered(MOVES, {"pad_borders.py"}))
def test_pads_and_strided_slices_verify_and_a_misplaced_block_fails(kb, name: str) -> None:
    """PAD.rows-copy (a channels-last map padded on two axes: two pad kernels) and a strided slice's
    phase copies (a Swin patch merging: eight copies, a cat, a projection)."""
    prepared = prepare_verify(Pipeline(kb, Design(task=str(CHAIN / name))))
    assert prepared.job is not None, prepared.report.reason
    assert prepared.report.design_kept, prepared.report.notes
    source = prepared.job.kernel_source
    pattern, planted_text, factory = MOVES[name]
    assert re.search(pattern, source) and factory in source
    planted = replace(prepared.job, kernel_source=re.sub(pattern, planted_text, source, count=1))
    clean, broken = run_many([prepared.job, planted], jobs=2, timeout_s=900, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and not ok.missing_passes, ok.reason
    assert ok.kernels_run == ok.kernels >= 3
    assert not bad.passed and "elements" in bad.reason, bad.reason
