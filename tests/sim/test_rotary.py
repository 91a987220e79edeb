"""Rotary embeddings through the real compiler: x * cos + rotate_half(x) * sin is one kernel whose
rotate_half is two views and a concat; it verifies on every element and pass, and the same kernel
with the sign of the rotated half flipped fails. The same formula on (B, H, T, D) queries with (T, D)
cos and sin tables broadcast over batch and heads verifies at verify's smaller sizes (it once stopped
with F7A001, forward's shapes fixed at the task's full size)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.slow]

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain" / "rotary.py"
HEADS = TASK.with_name("rotary_heads.py")


def test_rotary_verifies_and_a_flipped_sign_fails(kb) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASK))))
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert source.count("second * (-1.0)") == 1 and "rotate_half(x)" in source
    flipped = replace(prepared.job, kernel_source=source.replace("second * (-1.0)", "second * 1.0"))
    heads = prepare_verify(Pipeline(kb, Design(task=str(HEADS))))
    assert heads.job is not None, heads.report.reason
    clean, broken, broadcast = run_many([prepared.job, flipped, heads.job], jobs=2, timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    tables = finish_verify(heads, broadcast)
    assert tables.passed and tables.design_kept and not tables.missing_passes, tables.reason
    assert ok.passed and ok.design_kept, ok.reason
    assert not ok.missing_passes and len(ok.passes_checked) >= 7
    assert not bad.passed and "elements outside atol" in bad.reason, bad.reason
