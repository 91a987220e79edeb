"""A failed comparison says when the baseline itself does not hold at the test shapes: its fp32 output
against its own fp64 forward (KernelBench level-3 ResNet18 at x (2, 3, 3, 3), whose training-mode batch
norms take their statistics over 2 values a channel)."""

from __future__ import annotations

import torch
import torch.nn as nn

from pypto_tui.sim import jobs as J
from pypto_tui.sim.worker import _say_if_ill_conditioned


class _Offset(nn.Module):
    """(x + 1e4) - 1e4: fp32 keeps x only to the spacing of 1e4 (about 1e-3), fp64 keeps it whole."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x + 1e4) - 1e4


class _Double(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


def _failed(model: nn.Module) -> J.SimResult:
    torch.manual_seed(0)
    x = torch.rand(4, 64)
    with torch.no_grad():
        want = model(x.clone())
    result = J.SimResult(kind="verify", status=J.MISMATCH, passed=False, reason="10/256 elements outside the tolerance")
    job = J.SimJob(kind="verify", kernel_source="", inputs=(), task_file="task.py", tolerances={"fp32": (1e-4, 1e-4)})
    _say_if_ill_conditioned(torch, job, model, [x], want,
                            result)
    return result


def test_an_ill_conditioned_baseline_is_named_in_the_reason() -> None:
    r = _failed(_Offset())
    assert r.divergence is not None
    assert r.divergence.startswith("the baseline itself is ill-conditioned at these shapes")
    assert r.reason == "10/256 elements outside the tolerance"
    assert not r.passed and r.status == J.MISMATCH  # the verdict stays a fail


def test_a_well_conditioned_baseline_leaves_the_reason_alone() -> None:
    r = _failed(_Double())
    assert r.divergence is None and r.reason == "10/256 elements outside the tolerance"
