"""L1 and L2 normalisation of rows (C.vector-norm): x / its per-row statistic, with the task's eps
added or clamped; scaffolded, lint-clean, verified, a broken twin caught."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

NORMS = {  # fixture -> the value the kernel writes
    "l1_normalize_3d.py": "x / pypto.maximum(pypto.sum(pypto.abs(x), 1, keepdim=True), eps)",
    "l2_norm_eps_rows.py": "x_chunk / (pypto.sqrt(pypto.sum(x_chunk * x_chunk, 1, keepdim=True)) + eps)",
}



@pytest.mark.parametrize("name", sorted(NORMS))
def test_vector_norms_scaffold_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "C", k.reason
    assert NORMS[name] in k.source  # the statistic is parenthesised: x / (stat + eps), not x / stat + eps
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_a_3d_normalisation_runs_on_rows_and_reshapes_back(kb):
    p = pipe(kb, "l1_normalize_3d.py")
    assert p.dims().kernel_shapes == [(120, 200)]
    src = kernel_of(p).source
    assert "x_rows = x.reshape(-1, x.shape[2]).contiguous()" in src
    assert "return out.reshape(x.shape)" in src
    assert "create_l1_norm_kernel(rows, hidden, 1e-12)" in src  # F.normalize's default eps


@pytest.mark.sim
def test_vector_norms_verify_against_torch(kb):
    reports = verify_many([pipe(kb, n) for n in NORMS], jobs=1, cache=False)
    for name, r in zip(NORMS, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err < 1e-5, (name, r.max_abs_err)
    assert reports[1].loop_count is not None


@pytest.mark.sim
def test_an_l2_norm_without_the_square_root_fails(kb, broken_twins):
    (r,) = broken_twins([(pipe(kb, "l2_norm_eps_rows.py"), "pypto.sqrt(pypto.sum(x_chunk", "(pypto.sum(x_chunk")])
    assert r.status == J.MISMATCH and r.passed is False
