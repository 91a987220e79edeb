"""`verify TASK --kernel FILE` on a chain (issue 21): the test sizes are searched for the design the
file declares (its per-kernel constants), so an exported module runs at the generated module's test
sizes, and a file whose constants differ is told which and runs at sizes chosen for its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_one
from pypto_tui.sim.verification import finish_verify, prepare_kernel_verify, prepare_verify

CHAINS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"


def _export(task: Path, out: Path) -> Path:
    r = CliRunner().invoke(app, ["scaffold", str(task), "-o", str(out)])
    assert r.exit_code == 0, r.output
    return out


def test_an_exported_chain_module_runs_at_the_generated_modules_test_sizes(kb, tmp_path: Path) -> None:
    task = CHAINS / "linear_gelu_wide.py"  # too large as written: its size constants shrink
    p = Pipeline(kb, Design(task=str(task)))
    generated = prepare_verify(p).report
    module = _export(task, tmp_path / "kernel.py")
    mine = prepare_kernel_verify(p, module).report
    assert generated.sizes and mine.sizes == generated.sizes and mine.shapes == generated.shapes
    assert mine.design_kept and mine.kernels == generated.kernels >= 2 and not mine.notes
    edited = tmp_path / "edited.py"
    source = module.read_text()
    line = re.search(r"^TILE_SHAPE_K1 = .*$", source, re.M)
    assert line is not None, source
    edited.write_text(source.replace(line.group(0), "TILE_SHAPE_K1 = (8, 64)"))
    other = prepare_kernel_verify(p, edited).report
    # the sizes are searched for the file's own tile: (8, 64) no longer holds d_ff at (4, 4096)'s 4096 columns
    assert "d_ff" not in generated.sizes and other.design_kept, other.notes
    assert other.sizes["d_ff"][0] == 4096 and 64 <= other.sizes["d_ff"][1] < 4096 and other.sizes["d_ff"][1] % 64 == 0
    assert any("TILE_SHAPE_K1 = (8, 64)" in n and "chosen for the file's value" in n for n in other.notes), other.notes


@pytest.mark.sim
def test_an_exported_chain_module_verifies_as_a_kernel_file(kb, tmp_path: Path) -> None:
    task = CHAINS / "swiglu.py"
    p = Pipeline(kb, Design(task=str(task)))
    prepared = prepare_kernel_verify(p, _export(task, tmp_path / "swiglu_kernel.py"))
    assert prepared.job is not None and prepared.report.kernels == 3  # two GEMMs, then silu and the product
    report = finish_verify(prepared, run_one(prepared.job, cache=False))
    assert report.passed, report.reason
    assert not report.missing_passes and len(report.passes_checked) >= 7
