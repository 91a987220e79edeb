"""argmax / argmin over a dimension: topk(k=1) on the last axis, the first position of the extreme
along another axis (ARG.first-match: the transposed topk leaves three passes without rows),
indices cast to torch's int64 and compared exactly; broken twins (the wrong extreme) caught."""

from __future__ import annotations

import pytest
from family import pipe
from support import CI_AND_REST, part

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

ARGS = {  # fixture -> (op, the call that finds the index)
    "argmin_last_odd.py": ("argmin", "pypto.topk(x, 1, 1, False)"),
    "argmax_neg.py": ("argmax", "pypto.topk(x, 1, 2, True)"),
    "argmax_mid_keepdim.py": ("argmax", "pypto.amin(pypto.where(pypto.eq(x, best), position, float(d1)), 1"),
    "argmax_dim0_indices.py": ("argmax", "pypto.amin(pypto.where(pypto.eq(x, best), position, float(d0)), 0"),
}



@pytest.mark.parametrize("name", sorted(ARGS))
def test_arg_reductions_scaffold_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    op, topk = ARGS[name]
    assert k.supported and k.pattern == "argreduce", k.reason
    assert p.contract().op == op and p.contract().output_dtype == "int64"
    assert topk in k.source
    assert "pypto.transpose" not in k.source
    assert "pypto.DT_INT64)" in k.source and "dtype=torch.int64" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_the_kernel_keeps_the_reduced_axis_and_forward_drops_it_as_torch_does(kb):
    src = kernel_of(pipe(kb, "argmin_last_odd.py")).source
    assert "out: pypto.Tensor((d0, 1), pypto.DT_INT64)" in src
    assert "return out.reshape(x.shape[0])" in src
    assert "return out\n" in kernel_of(pipe(kb, "argmax_mid_keepdim.py")).source  # keepdim=True: as is


def test_a_large_argmax_loops_along_an_axis_it_does_not_reduce(kb):
    p = pipe(kb, "argmax_dim0_indices.py", contract_edits={"inputs.x.shape": [4096, 65536]})
    loop = p.loop_choice()
    assert loop is not None and loop.axis == 1
    assert "x_chunk = pypto.view(x, [d0, BASIC_BATCH], [0, off])" in kernel_of(p).source


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_arg_reductions_verify_exactly_against_torch(kb, which):
    names = part(list(ARGS), which)
    reports = verify_many([pipe(kb, n) for n in names], jobs=1, cache=False)
    for name, r in zip(names, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.outputs[0]["dtype"] == "int64" and "exactly" in r.outputs[0]["reason"]
        assert r.max_abs_err == 0


@pytest.mark.sim
def test_the_wrong_extreme_fails(kb, broken_twins):
    results = broken_twins([(pipe(kb, "argmax_neg.py"), ", 1, 2, True)", ", 1, 2, False)"),
                            (pipe(kb, "argmax_mid_keepdim.py"), "best = pypto.amax(x", "best = pypto.amin(x")])
    for r in results:
        assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
        assert "elements differ (compared exactly" in (r.reason or "")
