"""Huber / smooth L1 (one where on |d| < threshold) and the hinge loss whose targets broadcast
over the predictions' leading axes: scaffolded, lint-clean, verified, broken twins caught."""

from __future__ import annotations

import pytest
from family import pipe
from support import CI_AND_REST, part

from pypto_tui.design import kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

LOSSES = {  # fixture -> (op, text the kernel must contain)
    "huber_delta_module.py": ("huber_loss",
                              "pypto.where(pypto.lt(adiff, delta), diff * diff * 0.5, (adiff - delta * 0.5) * delta)"),
    "smooth_l1_beta.py": ("smooth_l1_loss",
                          "pypto.where(pypto.lt(adiff, beta), diff * diff * (0.5 / beta), adiff - beta * 0.5)"),
    "hinge_broadcast_3d.py": ("hinge_loss", "predictions * targets * (-1.0) + margin"),
}



@pytest.mark.parametrize("name", sorted(LOSSES))
def test_losses_scaffold_lint_clean(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    op, text = LOSSES[name]
    assert k.supported and k.pattern == "D", k.reason
    assert p.contract().op == op and text in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_huber_reads_delta_from_the_module_and_smooth_l1_its_beta(kb):
    huber = kernel_of(pipe(kb, "huber_delta_module.py")).source
    assert "create_huber_loss_kernel(rows, cols, float(self.delta))" in huber
    assert "create_smooth_l1_loss_kernel(rows, cols, 0.25)" in kernel_of(pipe(kb, "smooth_l1_beta.py")).source


def test_hinge_targets_broadcast_as_one_row(kb):
    """(6, 20, 33) predictions and (20, 33) targets: the contract counts 6 * 20 * 33 elements, the
    kernel reads (6, 660) and one (1, 660) row it widens, and forward only reshapes."""
    p = pipe(kb, "hinge_broadcast_3d.py")
    c = p.contract()
    assert c.output_shape == () and c.reduction.count == 6 * 20 * 33 and not c.unknown
    assert "targets_jk" in c.formula
    assert p.dims().strategy == "broadcast-loss-2d" and p.dims().kernel_shapes == [(6, 660), (1, 660)]
    src = kernel_of(p).source
    assert "predictions_rows = predictions.reshape(-1, targets.numel()).contiguous()" in src
    assert "targets_rows = targets.reshape(1, -1).contiguous()" in src
    assert "targets: pypto.Tensor((1, cols), pypto.DT_FP32)" in src


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_losses_verify_against_torch(kb, which):
    names = part(sorted(LOSSES, key=lambda n: n != "smooth_l1_beta.py"), which)  # CI: the looped loss
    reports = verify_many([pipe(kb, n) for n in names], jobs=1, cache=False)
    for name, r in zip(names, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        if name == "smooth_l1_beta.py":
            assert r.loop_count is not None  # accumulated over a loop


@pytest.mark.sim
def test_broken_losses_fail(kb, broken_twins):
    """Huber's branches swapped; hinge averaged over the targets' elements, not the broadcast's."""
    results = broken_twins([
        (pipe(kb, "huber_delta_module.py"), "pypto.lt(adiff, delta)", "pypto.ge(adiff, delta)"),
        (pipe(kb, "hinge_broadcast_3d.py"), "INV_COUNT = 1.0 / (rows * cols)", "INV_COUNT = 1.0 / cols"),
    ])
    for r in results:
        assert r.status == J.MISMATCH and r.passed is False, (r.label, r.status, r.error)
