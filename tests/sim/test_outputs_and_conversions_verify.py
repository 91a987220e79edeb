"""What a model returns, through the real compiler: an int8 quantisation compared exactly (a twin that
truncates where torch rounds fails), a tuple of two kernels' outputs each compared (a twin whose second
kernel is wrong fails on the second output), and a traced mixture-of-experts router whose top-k values
are one kernel (a twin that takes the smallest values fails), and a router that gathers its softmax weights at
its top-k experts' positions (a twin that gathers from the logits fails)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.torch]

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CASES = {  # task, front end, the bug planted in the module: (text, replacement)
    "quantize_int8": (FIX / "tasks_extra" / "quantize_int8.py", "static",
                      ("DT_INT32, mode=pypto.CastMode.CAST_RINT", "DT_INT32, mode=pypto.CastMode.CAST_TRUNC")),
    "tuple_return": (FIX / "tasks_chain" / "tuple_return.py", "static",
                     ("pypto.sum(n1, 1) * INV_COUNT", "pypto.sum(n1, 1) * INV_COUNT * 1.01")),
    "topk_gate": (FIX / "tasks_traced" / "topk_gate.py", "traced",
                  ("pypto.topk(n1, 4, 1, True)", "pypto.topk(n1, 4, 1, False)")),
    "topk_gather": (FIX / "tasks_traced" / "topk_gather.py", "traced",
                    ("self._k3(t_n1, t_n2)", "self._k3(t_n0, t_n2)")),
}
IN_CI = {"quantize_int8"}


@pytest.mark.parametrize("name", [n if n in IN_CI else pytest.param(n, marks=pytest.mark.exhaustive) for n in CASES])
def test_what_the_model_returns_verifies_and_its_twin_fails(kb, name: str) -> None:
    task, front_end, (old, new) = CASES[name]
    prepared = prepare_verify(Pipeline(kb, Design(task=str(task), front_end=front_end)))
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert old in source, source
    twin = replace(prepared.job, kernel_source=source.replace(old, new, 1))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=600, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and ok.design_kept, ok.reason
    assert ok.kernels_run == ok.kernels and ok.pass_rows == 6 * ok.kernels
    assert bad.supported and not bad.passed, bad.reason
    if name == "quantize_int8":
        assert [o["dtype"] for o in ok.outputs] == ["int8"] and ok.max_abs_err == 0
    if name == "tuple_return":  # both outputs compared; only the second is wrong
        assert len(ok.outputs) == 2 and [o["passed"] for o in bad.outputs] == [True, False]
