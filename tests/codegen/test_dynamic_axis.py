"""Scaffolds in PyPTO's own idiom for a dynamic axis (issue 12): `--dynamic-axis N` or the task's
DYNAMIC_AXIS makes that axis pypto.DYNAMIC; the kernel reads its size, loops ceildiv(size, block)
times and gives the last block a valid_shape instead of a copied tail."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract.extract import extract_contract
from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.lint.engine import lint_source

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = FIX / "tasks"
GYM = FIX / "tasks_extra" / "relu_dynamic_batch.py"


def kernel(kb, task: Path, **design):
    p = Pipeline(kb, Design(task=str(task), **design))
    return p, kernel_of(p)


def test_the_tasks_declaration_is_read_through_its_formula(kb):
    c = extract_contract(GYM, kb)
    assert c.dynamic_axes == (0,) and not c.dynamic_problem
    assert any(f.rule == "P1.dynamic-axis" and f.level == "info" for f in c.findings)


def test_a_declaration_naming_no_axis_is_reported_and_the_kernel_stays_static(kb, tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(GYM.read_text().replace('DYNAMIC_AXIS = ["N"]', 'DYNAMIC_AXIS = ["Q"]'))
    c = extract_contract(bad, kb)
    assert c.dynamic_axes == () and "'Q'" in c.dynamic_problem
    assert [f.level for f in c.findings if f.rule == "P1.dynamic-axis"] == ["warn"]
    assert "pypto.DYNAMIC" not in kernel(kb, bad)[1].source


def test_declared_dynamic_batch_gives_a_dynamic_kernel(kb):
    p, k = kernel(kb, GYM)
    assert k.supported, k.reason
    src = k.source
    assert "x: pypto.Tensor([pypto.DYNAMIC], pypto.DT_FP32)" in src
    assert "flat_size = x.shape[0]" in src
    assert "pypto.loop(pypto.ceildiv(flat_size, BASIC_BATCH)" in src
    assert "valid = pypto.min(BASIC_BATCH, flat_size - off)" in src
    assert "valid_shape=[valid]" in src and "TAIL" not in src
    assert "def create_relu_kernel():" in src and "create_relu_kernel()" in src
    assert p.kernel_plan().dynamic is not None and p.kernel_plan().dynamic.source == "the task's DYNAMIC_AXIS"
    assert lint_source(src, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_the_block_is_the_plans_chunk(kb):
    """A design that loops keeps its BASIC_BATCH as the block; rows stay whole in each view."""
    p, k = kernel(kb, TASKS / "softmax_rows.py", dynamic_axis=0)
    assert k.supported, k.reason
    assert k.constants["BASIC_BATCH"]["value"] == p.kernel_plan().loop.candidate.basic_batch
    assert "x_chunk = pypto.view(x, [BASIC_BATCH, d1], [off, 0], valid_shape=[valid, d1])" in k.source
    assert "x: pypto.Tensor([pypto.DYNAMIC, d1], pypto.DT_FP32)" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_none_keeps_the_declared_axis_static(kb):
    _, k = kernel(kb, GYM, dynamic_axis=-1)
    assert k.supported and "pypto.DYNAMIC" not in k.source


@pytest.mark.parametrize(("task", "why"), [
    ("batch_norm.py", "must be the one the kernel loops over"),
    ("mse_loss.py", "cannot be left to run time"),
    ("softmax_rows.py", "is not an axis of the first input"),
])
def test_a_dynamic_axis_the_kernel_cannot_take_says_why(kb, task, why):
    _, k = kernel(kb, TASKS / task, dynamic_axis=5 if why.startswith("is not") else 0)
    assert not k.supported and why in k.reason


def test_cli_dynamic_axis_option(tmp_path):
    r = CliRunner().invoke(app, ["scaffold", str(TASKS / "softmax_rows.py"), "--dynamic-axis", "0", "--json"])
    assert r.exit_code == 0 and "pypto.DYNAMIC" in json.loads(r.stdout)["source"]
    r = CliRunner().invoke(app, ["scaffold", str(GYM), "--dynamic-axis", "none", "--json"])
    assert r.exit_code == 0 and "pypto.DYNAMIC" not in json.loads(r.stdout)["source"]
    r = CliRunner().invoke(app, ["scaffold", str(GYM), "--dynamic-axis", "rows"])
    assert r.exit_code == 2 and "give an axis number" in r.output
