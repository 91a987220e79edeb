"""Exact GELU: erf by the pack's rational approximation (GELU.exact-erf), never the tanh form.
The count-based tolerance would let the tanh form (4.7e-4 off) pass, so the test holds the
kernel's max error to 1e-5, which only the erf form meets; fp16 is computed in fp32."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

GELUS = ["gelu_exact_3d.py", "gelu_fp16.py"]



@pytest.mark.parametrize("name", GELUS)
def test_gelu_scaffolds_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "A", k.reason
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_exact_gelu_uses_the_erf_approximation_not_tanh(kb):
    k = kernel_of(pipe(kb, "gelu_exact_3d.py"))
    src = k.source
    assert "t = pypto.reciprocal(z * 0.3275911 + 1.0)" in src
    # x * q / 2 is written once and shared by both branches (codegen/cse.py)
    assert "shared0 = x * q * 0.5" in src and "pypto.where(pypto.ge(x, 0.0), x - shared0, shared0)" in src
    assert "sigmoid" not in src and "0.044715" not in src
    assert "(GELU.exact-erf)" in src and any(f.rule == "GELU.exact-erf" for f in k.findings)


def test_half_precision_gelu_is_computed_in_fp32(kb):
    src = kernel_of(pipe(kb, "gelu_fp16.py")).source  # approximate="tanh": that form is the definition
    assert "xf = pypto.cast(x, pypto.DT_FP32)" in src and "pypto.DT_FP16)" in src
    assert "0.044715" in src


def test_the_tanh_form_is_not_exact():
    """Why the erf form: the tanh approximation is 4.7e-4 off the exact GELU on N(0, 9) inputs."""
    torch = pytest.importorskip("torch")
    x = torch.randn(100_000, generator=torch.Generator().manual_seed(0)) * 3
    gap = (torch.nn.functional.gelu(x, approximate="tanh") - torch.nn.functional.gelu(x)).abs().max()
    assert float(gap) > 4e-4


@pytest.mark.sim
def test_gelus_verify_within_erf_accuracy(kb):
    reports = verify_many([pipe(kb, n) for n in GELUS], jobs=1, cache=False)
    for name, r in zip(GELUS, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
    assert reports[0].max_abs_err < 1e-5  # the tanh form is 4.7e-4 off: it would not meet this


@pytest.mark.sim
def test_gelu_with_the_branches_swapped_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, "gelu_exact_3d.py"), "pypto.ge(x, 0.0)", "pypto.lt(x, 0.0)")])
    assert r.status == J.MISMATCH and r.passed is False
