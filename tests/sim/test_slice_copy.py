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
