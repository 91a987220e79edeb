"""`pypto-tui contract` and the task-file forms of `tile` / `loop`."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
runner = CliRunner()
KEYS = {"family", "op", "supported", "reason", "inputs", "init_params", "reduction", "asymmetric", "direction",
        "formula", "output_shape", "unknown", "dims"}


def invoke(*args: str):
    return runner.invoke(app, list(args), env={"NO_COLOR": "1", "TERMINAL_WIDTH": "120"})


def test_contract_json_keys_are_the_public_contract():
    r = invoke("contract", str(TASKS / "kl_div_batchmean.py"), "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert KEYS <= set(d)
    assert (d["family"], d["op"], d["asymmetric"]) == ("loss", "kl_div", True)
    assert d["reduction"] == {**d["reduction"], "axes": [0, 1], "keepdim": False, "scaling": "batchmean"}
    assert "targets" in d["direction"] and d["unknown"] == []
    assert {"kernel_rank", "forward_reshape", "kernel_shapes", "reduce_axis", "merged_axes"} <= set(d["dims"])
    assert all({"name", "kind", "shape", "dtype"} <= set(i) for i in d["inputs"])
    assert d["selfcheck"] is None


def test_contract_human_output():
    r = invoke("contract", str(TASKS / "mean_spatial.py"))
    assert r.exit_code == 0
    assert "mean" in r.stdout and "dimension plan" in r.stdout and "(16, 64, 16384)" in r.stdout


@pytest.mark.parametrize(("text", "needle"), [
    ("this is not python (", "Python"),
    ("import torch\n", "Model"),
])
def test_contract_bad_file_exits_2(tmp_path, text, needle):
    bad = tmp_path / "bad.py"
    bad.write_text(text)
    r = invoke("contract", str(bad))
    assert r.exit_code == 2
    assert needle in r.stderr and "Traceback" not in r.output
    assert invoke("contract", str(tmp_path / "missing.py")).exit_code == 2


def test_tile_and_loop_take_a_task_file():
    r = invoke("tile", str(TASKS / "max_over_dim.py"), "--json")
    d = json.loads(r.stdout)
    assert (d["shape"], d["reduce_dim"]) == ([16, 256, 256], 1)
    assert d["best_by_rules"]["tile"] == [1, 16, 256]  # the documents' preset for this shape
    # the default pack's ranking = "auto": the estimate decides a reduction's tile (issue 22)
    assert d["ranking"] == "estimate" and d["recommended"]["tile"] == d["best_by_estimate"]["tile"] == [1, 32, 256]
    r = invoke("loop", str(TASKS / "scalar_mul_large.py"), "--json")
    d = json.loads(r.stdout)
    assert d["shape"] == [67108864] and d["needs_loop"] is True
    r = invoke("loop", str(TASKS / "matmul_tall.py"), "--json")
    d = json.loads(r.stdout)
    assert d["needs_loop"] is True and "matmul" in d["reason"]
    assert invoke("tile", str(TASKS / "elu.py"), "--shape", "4,4").exit_code == 2


@pytest.mark.torch
@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs CPU torch")
def test_contract_run_self_check_agrees():
    r = invoke("contract", str(TASKS / "softmax_rows.py"), "--run", "--json")
    assert r.exit_code == 0, r.output
    sc = json.loads(r.stdout)["selfcheck"]
    assert sc["status"] == "agree" and sc["max_abs_err"] < 1e-5
