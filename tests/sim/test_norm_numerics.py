"""Norm statistics that survive rows whose spread is small beside their mean (KernelBench level-2
task 3: a transposed conv plus a constant, then LayerNorm). var = E[x^2] - mean^2 costs the same
ops as the two-pass variance but cancels in fp32 there; the strict criterion sees it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.slow]

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "shifted_layernorm.py"
TWO_PASS = "centred = n1 - mean\n"
ONE_PASS_VAR = "var = pypto.sum(n1 * n1, 1, keepdim=True) * INV_HIDDEN - mean * mean\n"


def test_the_two_pass_layer_norm_verifies_where_e_x2_minus_mean2_fails(kb) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASK))))
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert source.count(TWO_PASS) == 1, source
    lines = source.splitlines(keepends=True)
    var_line = next(i for i, line in enumerate(lines) if line.lstrip().startswith("var = "))
    indent = lines[var_line][: len(lines[var_line]) - len(lines[var_line].lstrip())]
    lines[var_line] = indent + ONE_PASS_VAR
    one_pass = "".join(lines).replace("centred * pypto.rsqrt", "(n1 - mean) * pypto.rsqrt")
    clean, cancelled = run_many([prepared.job, replace(prepared.job, kernel_source=one_pass)], jobs=2,
                                timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, cancelled)
    assert ok.passed, ok.reason
    assert not bad.passed and "elements outside atol" in bad.reason, bad.reason
