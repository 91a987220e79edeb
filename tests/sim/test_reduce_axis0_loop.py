"""A reduction over axis 0 that needs a loop (KernelBench level-2 39: BatchNorm1d's batch mean of a
(16384, 4096) GEMM output) loops along axis 1: chunks of columns, each reduced whole over axis 0.
A loop along the reduced axis would need an accumulator; this one needs none."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "mean_over_batch.py"
CHUNK_VIEW = "x_chunk = pypto.view(x, [d0, BASIC_BATCH], [0, off])"


def test_the_loop_runs_along_the_columns(kb) -> None:
    p = Pipeline(kb, Design(task=str(TASK), loop_count=4))
    assert p.needs().loop_axis == 1 and p.loop_choice().candidate.loop_count == 4
    src = kernel_of(p).source
    assert CHUNK_VIEW in src and "pypto.assemble(pypto.sum(x_chunk, 0, keepdim=True) * INV_COUNT, [0, off], out)" in src
    assert "looping along axis 1" in src


@pytest.mark.sim
@pytest.mark.slow
def test_the_column_loop_verifies_and_a_wrong_offset_fails(kb) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASK), loop_count=4)))
    assert prepared.job is not None, prepared.report.reason
    r = prepared.report
    assert r.design_kept and r.design_loop_count == 4 and r.loop_count >= 2, r.notes
    src = prepared.job.kernel_source
    wrong = src.replace("* INV_COUNT, [0, off], out)", "* INV_COUNT, [0, 0], out)", 1)
    assert wrong != src
    clean, broken = run_many([prepared.job, replace(prepared.job, kernel_source=wrong)], jobs=2, timeout_s=600,
                             cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed, ok.reason
    # every iteration writes column block 0, so the other columns keep whatever the output buffer held:
    # usually finite garbage, sometimes a NaN; either way the comparison must name the mismatch
    assert not bad.passed, bad.reason
    assert "elements outside atol" in bad.reason or "NaN positions differ" in bad.reason, bad.reason
