"""The `docs` flavour (PyPTO's own idiom: out[:] = value, RunMode names) compiles and verifies on
pypto 0.2.0 like the default flavour, one fixture per pattern, every compiler pass checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim.verification import verify_many

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
ONE_PER_PATTERN = ["elu", "matmul_tall", "group_norm", "mse_loss", "frobenius_scale", "softmax_rows", "max_over_dim"]


@pytest.mark.sim
def test_docs_flavour_kernels_verify(kb):
    pipes = [Pipeline(kb, Design(task=str(TASKS / f"{n}.py"), flavour="docs")) for n in ONE_PER_PATTERN]
    for p in pipes:
        src = kernel_of(p).source
        assert "pypto.RunMode.SIM" in src and ".move(" not in src
    reports = verify_many(pipes, jobs=2, cache=False)
    for name, r in zip(ONE_PER_PATTERN, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)


EXTRA = TASKS.parent / "tasks_extra"
DYNAMIC = [(EXTRA / "relu_dynamic_batch.py", None), (TASKS / "softmax_rows.py", 0),
           (TASKS / "scalar_mul_large.py", 0), (TASKS / "group_norm.py", 0)]


@pytest.mark.sim
def test_dynamic_axis_kernels_verify_like_the_static_ones(kb):
    """A pypto.DYNAMIC axis, ceildiv loops and valid_shape for the last block, every pass checked
    (at the reduced verify shapes the relu batch's one block is partial: 16 of 48 rows' worth)."""
    pipes = [Pipeline(kb, Design(task=str(t), dynamic_axis=a)) for t, a in DYNAMIC]
    for p in pipes:
        k = kernel_of(p)
        assert k.supported and "pypto.DYNAMIC" in k.source and "valid_shape=" in k.source, k.reason
    reports = verify_many(pipes, jobs=2, cache=False)
    for (task, _), r in zip(DYNAMIC, reports, strict=True):
        assert r.supported and r.passed, (task.name, r.reason)
