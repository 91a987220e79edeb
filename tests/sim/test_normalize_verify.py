"""F.normalize inside a model (NetVLAD's intra- and whole-row normalisations), through the real compiler:
the vector norm over a middle axis is a sum of squares, then sqrt, clamp and divide on the broadcast norm;
the module verifies with every kernel run and every pass row, and a twin whose divide skips the square
root of the second normalisation fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.torch]

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced" / "vlad_normalize.py"


def test_a_normalised_residual_verifies_and_a_twin_without_the_root_fails(kb) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASK))))
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    old = "n2 / pypto.maximum(pypto.sqrt(n3_norm_sum_all_w1), 1e-12)"
    assert old in source, source
    twin = replace(prepared.job, kernel_source=source.replace(old, "n2 / pypto.maximum(n3_norm_sum_all_w1, 1e-12)"))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and ok.design_kept, ok.reason
    assert ok.kernels == 7 and ok.kernels_run == ok.kernels and ok.pass_rows == 6 * ok.kernels
    assert bad.supported and not bad.passed, bad.reason
