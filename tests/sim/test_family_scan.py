"""The scan family (the worked example of CONTRIBUTING.md): scaffolded, lint-clean, verified
against torch through the real compiler, and a broken twin caught."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.lint.engine import lint_source
from pypto_tui.sim import jobs as J
from pypto_tui.sim.design_runs import init_args, input_specs, variant
from pypto_tui.sim.runner import run_one
from pypto_tui.sim.verification import reduced_shapes, verify_many

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"
SCANS = ["cumsum_dim.py", "cumsum_dim0.py"]


def pipe(kb, name: str, **design) -> Pipeline:
    return Pipeline(kb, Design(task=str(EXTRA / name), **design))


@pytest.mark.parametrize("name", SCANS)
def test_scans_scaffold_lint_clean_with_the_scan_axis(kb, name):
    p = pipe(kb, name)
    k = kernel_of(p)
    assert k.supported and k.pattern == "scan", k.reason
    axis = p.dims().reduce_axis
    assert f"pypto.cumsum(x, {axis})" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_cumsum_tile_fits_its_16_row_transpose_buffers(kb):
    """ops.toml: cumsum holds 3 buffers of >= 16 rows; the tile step steps (4, 4000) down to fit."""
    from pypto_tui.tiles import held_bytes

    main = pipe(kb, "cumsum_dim.py").tile_choices()[0]
    assert main.source == "stepped-down"
    assert held_bytes(kb, main.tile, "fp32", 3, 16) <= kb.chip.ub_bytes
    assert held_bytes(kb, main.requested, "fp32", 3, 16) > kb.chip.ub_bytes


@pytest.mark.sim
def test_scans_verify_against_torch(kb):
    reports = verify_many([pipe(kb, n) for n in SCANS], jobs=2, cache=False)
    for name, r in zip(SCANS, reports, strict=True):
        assert r.supported and r.passed, (name, r.reason)
        assert r.max_abs_err is not None and r.max_abs_err < 1e-3


@pytest.mark.sim
def test_a_scan_on_the_wrong_axis_fails(kb):
    p = pipe(kb, "cumsum_dim.py")
    edits = {f"inputs.{n}.shape": list(s) for n, s in reduced_shapes(p).items()}
    test = variant(p, contract_edits=edits)
    src = kernel_of(test).source
    assert src.count("pypto.cumsum(x, 1)") == 1
    job = J.SimJob(kind="verify", kernel_source=src.replace("pypto.cumsum(x, 1)", "pypto.cumsum(x, 0)"),
                   inputs=tuple(input_specs(test, with_recipe=True)), init_args=tuple(init_args(test)),
                   task_file=str(EXTRA / "cumsum_dim.py"), label="broken scan")
    result = run_one(job, cache=False)
    assert result.status == J.MISMATCH and result.passed is False
