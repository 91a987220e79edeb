"""Cross-entropy (LOSS.cross-entropy-gather): log-softmax per row, gather of the target column,
the batch sum scaled as the contract says; scaffolded, lint-clean, verified, a broken twin caught."""

from __future__ import annotations

import pytest
from family import pipe

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many
from pypto_tui.sim.verify_shapes import reduced_shapes

CES = ["cross_entropy_7_classes.py", "cross_entropy_randint.py"]



@pytest.mark.parametrize("name", CES)
def test_cross_entropy_scaffolds_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "D" and p.pattern().id == "cross_entropy", k.reason
    assert "picked = pypto.gather(logp, 1, " in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_sum_and_mean_scale_the_batch_sum(kb):
    assert "NEG_SCALE = -1.0\n" in kernel_of(pipe(kb, "cross_entropy_7_classes.py")).source  # reduction="sum"
    src = kernel_of(pipe(kb, "cross_entropy_randint.py")).source
    assert "NEG_SCALE = -1.0 / rows" in src
    assert "targets_col = targets.reshape(-1, 1).contiguous()" in src


def test_the_class_count_is_kept_at_verify_shapes(kb):
    """targets = randint(0, num_classes): shrinking the class axis would put targets out of range."""
    p = pipe(kb, "cross_entropy_randint.py", contract_edits={"inputs.predictions.shape": [32768, 4096],
                                                              "inputs.targets.shape": [32768]})
    assert p.contract().input("targets").recipe["high"] == 10  # the fixture's num_classes, not edited
    q = pipe(kb, "cross_entropy_randint.py", contract_edits={"inputs.predictions.shape": [32768, 10],
                                                              "inputs.targets.shape": [32768]})
    assert reduced_shapes(q)["predictions"][1] == 10
    assert reduced_shapes(p)["predictions"][1] < 4096  # 4096 is no randint bound here: it may shrink


def test_what_is_not_scaffolded_says_why(kb):
    p = pipe(kb, "cross_entropy_7_classes.py", contract_edits={"op_args.label_smoothing": 0.1})
    assert not kernel_of(p).supported and "label smoothing" in kernel_of(p).reason


@pytest.mark.sim
def test_cross_entropy_verifies_against_torch(kb):
    reports = verify_many([pipe(kb, n) for n in CES], jobs=1, cache=False)
    for name, r in zip(CES, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err < 1e-4


@pytest.mark.sim
def test_cross_entropy_without_the_normaliser_fails(kb, broken_twins):
    """The log-softmax must subtract the log of the row's sum: dropping it is caught."""
    (r,) = broken_twins([(pipe(kb, "cross_entropy_7_classes.py"),
                          "logp = shifted - pypto.log(pypto.sum(pypto.exp(shifted), 1, keepdim=True))",
                          "logp = shifted")])
    assert r.status == J.MISMATCH and r.passed is False
