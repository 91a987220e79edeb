"""`contract`, `tile`, `scaffold` and `verify` take a task's verdict and its kernels from one place
(design.task_kernels over the operator graph), so on every fixture they agree: the task can be
scaffolded exactly when `contract` says it is supported, and `contract` lists the kernels `tile`
shows and the generated module runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TASKS = sorted(p for folder in ("tasks", "tasks_chain", "tasks_conv", "tasks_extra")
               for p in (FIXTURES / folder).glob("*.py") if not p.name.startswith("_"))
ENV = {"NO_COLOR": "1", "COLUMNS": "200"}
runner = CliRunner()


def _json(*args: str) -> tuple[int, dict | None]:
    r = runner.invoke(app, [*args, "--json"], env=ENV)
    try:
        return r.exit_code, json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.exit_code, None


@pytest.mark.parametrize("task", TASKS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_contract_tile_and_scaffold_agree(task: Path, tmp_path: Path) -> None:
    code, contract = _json("contract", str(task))
    if code == 2:  # bad input (no Model, a syntax error): every command refuses it the same way
        assert _json("scaffold", str(task), "-o", str(tmp_path / "m.py"))[0] == 2
        return
    assert contract is not None
    out = tmp_path / "m.py"
    scode, scaffold = _json("scaffold", str(task), "-o", str(out))
    assert scaffold is not None
    assert (scaffold["status"] == "ok") == contract["supported"], (contract["reason"], scaffold.get("reason"))
    assert (scode == 0) == contract["supported"]
    if not contract["supported"]:
        assert contract["reason"] and scaffold["reason"] == contract["reason"]
        assert "\n" not in contract["reason"] and len(contract["reason"]) <= 200, contract["reason"]
        return
    kernels = contract["kernels"]
    assert [k["index"] for k in kernels] == list(range(len(kernels)))
    tcode, tile = _json("tile", str(task))
    assert tcode != 2 and tile is not None
    shown = tile.get("kernels", [tile])
    assert len(shown) == len(kernels)
    if len(kernels) > 1:
        assert [k["ops"] for k in shown] == [k["ops"] for k in kernels]
        source = out.read_text()
        assert all(f"self._k{k['index']}(" in source for k in kernels)  # the module runs every kernel


def test_a_chain_is_supported_by_contract_with_its_kernels() -> None:
    code, doc = _json("contract", str(FIXTURES / "tasks_chain" / "swiglu.py"))
    assert code == 0 and doc is not None and doc["supported"] and doc["reason"] == ""
    assert [(k["ops"], k["family"]) for k in doc["kernels"]] == [
        ("linear", "matmul"), ("linear", "matmul"), ("swish, mul", "elementwise")]
    assert doc["output_shape"] == [128, 384]
    text = runner.invoke(app, ["contract", str(FIXTURES / "tasks_chain" / "swiglu.py")], env=ENV).stdout
    assert "a chain of 3 kernels" in text and "matches no operator pattern" not in text


def test_a_refusal_names_the_construct_in_one_short_line(tmp_path: Path) -> None:
    """A forward of many operators that ends in one nobody knows: the refusal quotes a bounded piece of
    it and names the unknown call, in one line of at most 200 characters."""
    chain = "x"
    for i in range(12):
        chain = f"torch.relu({chain} * {i + 1}.5 + torch.tanh(x))"
    task = tmp_path / "long_forward.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n\n    def forward(self, x):\n"
        f"        return torch.special.xlogy({chain}, x)\n\n\ndef get_inputs():\n"
        "    return [torch.randn(8, 16)]\n\n\ndef get_init_inputs():\n    return []\n")
    code, doc = _json("contract", str(task))
    assert code != 2 and doc is not None and not doc["supported"], doc
    assert "\n" not in doc["reason"] and len(doc["reason"]) <= 200, doc["reason"]
    assert "xlogy" in doc["reason"]
