"""The traced front end through every command, from stored traces (tests/fixtures/traces, put in a
cache of the test's own under the key the tracer computes, so no task code runs and torch is not
imported): `scaffold --front-end traced` gives a module for each model the static reader refuses
(nn.Sequential, a ModuleList loop, a helper function, an `if` on an attribute, nested blocks with
eval-mode BatchNorm) and for a shape unpacked into names (which both read), whose ModelNew reaches the
task's own submodules;
`tile`, `loop`, `export` and `verify` take the option and say which front end read the task."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline, task_kernels
from pypto_tui.kb import get_kb

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRACES = FIX / "traces"
TRACED = FIX / "tasks_traced"
NAMES = ["sequential_mlp", "modulelist_loop", "helper_function", "if_attribute", "shape_unpack", "nested_bn_eval",
         "causal_heads", "lstm_classifier", "lstm_states", "gru_hidden",
         "gru_bidirectional", "mha_self", "topk_gate", "topk_gather", "vlad_normalize", "embed_norm", "bias_table",
         "cyclic_shift", "qkv_bias"]
# nn.Module's own methods, which the task's __init__ may call
MODULE_METHODS = {"get_submodule", "modules", "eval", "register_buffer"}
# `b, t, d = x.shape`, and topk, gather, F.normalize, nn.Embedding and torch.roll in a chain, are read statically too
STATIC_READS = {"shape_unpack", "topk_gate", "topk_gather", "vlad_normalize", "embed_norm", "cyclic_shift"}
NOT_YET: dict[str, str] = {}
"""Traced models whose graph reads but whose module is refused, with the reason."""


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "160"})


@pytest.mark.parametrize("name", NAMES)
def test_scaffold_traced_writes_a_module_where_the_static_reader_cannot(cache, name):
    task = TRACED / f"{name}.py"
    static = json.loads(run("scaffold", str(task), "--json").stdout)
    assert static["front_end"] == "static" and static["status"] == ("ok" if name in STATIC_READS else "unsupported")
    r = run("scaffold", str(task), "--front-end", "traced", "--json")
    doc = json.loads(r.stdout)
    if name in NOT_YET:
        assert r.exit_code == 1 and doc["front_end"] == "traced" and NOT_YET[name] in doc["reason"]
        return
    assert r.exit_code == 0, r.output
    assert doc["front_end"] == "traced" and doc["status"] == "ok", doc["reason"]
    source = doc["source"]
    tree = ast.parse(source)
    model_new = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew")
    # ModelNew builds the task's module tree (Model.__init__'s body) and reaches each submodule in it: no
    # attribute of ModelNew is a flattened path such as self.net_0 or self.blocks_0_conv
    init = next(f for f in model_new.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
    made = {t.attr for s in ast.walk(init) if isinstance(s, ast.Assign) for t in s.targets
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self"}
    made |= {c.args[0].value for c in ast.walk(init) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
             and c.func.attr == "register_buffer" and c.args and isinstance(c.args[0], ast.Constant)}
    read = {n.attr for n in ast.walk(model_new) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == "self"}
    assert read - MODULE_METHODS <= made, read - made


def test_nested_models_reach_their_submodules_and_carry_the_classes_init_builds(cache):
    doc = json.loads(run("scaffold", str(TRACED / "nested_bn_eval.py"), "--front-end", "traced", "--json").stdout)
    source = doc["source"]
    assert 'self._k0.blocks_0_conv = self.get_submodule("blocks.0").conv' in source
    assert 'self.get_submodule("blocks.2").bn.running_var' in source
    assert "\nclass Block(nn.Module):" in source  # the task's submodule class, which Model.__init__ builds
    # eval-mode BatchNorm: the running statistics, weight and bias are the kernels' inputs
    assert doc["source"].count("running_mean") >= 4 and "batch_norm_kernel" not in source
    seq = json.loads(run("scaffold", str(TRACED / "sequential_mlp.py"), "--front-end", "traced", "--json").stdout)
    assert 'self._k0(x, self.get_submodule("net.0").weight)' in seq["source"]


def test_tile_loop_export_and_contract_say_which_front_end(cache, tmp_path):
    task = TRACED / "modulelist_loop.py"
    p = Pipeline(get_kb(), Design(task=str(task), front_end="traced"))
    found = task_kernels(p)
    assert found.supported and found.chain
    for command in ("tile", "loop", "contract"):
        doc = json.loads(run(command, str(task), "--front-end", "traced", "--json").stdout)
        assert doc["front_end"] == "traced", command
        if command != "contract":
            assert [k["ops"] for k in doc["kernels"]] == [k.ops for k in found.kernels]
    assert json.loads(run("tile", str(FIX / "tasks" / "softmax_rows.py"), "--json").stdout)["front_end"] == "static"
    folder = tmp_path / "tasks"
    folder.mkdir()
    for name in ("sequential_mlp", "if_attribute"):
        shutil.copy(TRACED / f"{name}.py", folder)
    r = run("export", str(folder), "-o", str(tmp_path / "out"), "--front-end", "traced", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["front_end"] == "traced" and doc["counts"]["ok"] == 2
    assert all(row["front_end"] == "traced" for row in doc["tasks"])


def test_a_design_names_its_front_end_and_a_bad_one_is_one_line(cache, tmp_path):
    d = Design.from_dict({"task": "t.py", "front_end": "traced"})
    assert d.front_end == "traced" and Design.from_dict(json.loads(d.to_json())).front_end == "traced"
    assert Design.from_dict({"task": "t.py"}).front_end == "static"  # a session saved before the field
    from pypto_tui.errors import InputError

    with pytest.raises(InputError, match="front_end must be one of static, traced"):
        Design.from_dict({"task": "t.py", "front_end": "dynamo"})
    for command in ("scaffold", "tile", "loop", "verify"):
        r = run(command, str(TRACED / "if_attribute.py"), "--front-end", "dynamo")
        assert r.exit_code == 2, (command, r.output)
        assert "--front-end is static or traced, not 'dynamo'" in r.output and "Traceback" not in r.output


def test_a_static_refusal_names_where_the_graph_stopped_not_the_last_operator():
    # forward ends in nn.Linear (which the reader takes alone), but the graph stops at math.sqrt earlier on
    doc = json.loads(run("contract", str(TRACED / "causal_heads.py"), "--json").stdout)
    assert not doc["supported"]
    assert doc["reason"].startswith("forward could not be read into an operator graph: 'math.sqrt(...)'")
    assert "--front-end traced" in doc["reason"] and "learned weights" not in doc["reason"]
    # scaffold gives the same refusal, not the final nn.Linear's
    r = run("scaffold", str(TRACED / "causal_heads.py"), "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["reason"] == doc["reason"]


def test_every_command_refusing_a_model_the_static_reader_stopped_in_offers_the_traced_front_end():
    """A submodule (self.net, an nn.Sequential) stops the static reader: contract and scaffold say where,
    in one line, with the remedy."""
    doc = json.loads(run("contract", str(TRACED / "sequential_mlp.py"), "--json").stdout)
    assert not doc["supported"] and "self.net(...)" in doc["reason"]
    assert doc["reason"].endswith("(--front-end traced reads it by running it)")
    r = run("scaffold", str(TRACED / "sequential_mlp.py"))
    assert r.exit_code == 1 and "self.net(...)" in r.output and "--front-end traced" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = run("tile", str(TRACED / "sequential_mlp.py"))
    assert r.exit_code == 2 and doc["reason"] in r.output and "no kernel shape" not in r.output
    r = run("verify", str(TRACED / "sequential_mlp.py"), "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["reason"] == doc["reason"]


def test_a_fill_block_in_a_concatenation_is_a_pad_of_its_neighbour(cache):
    """Swin V2's qkv bias, `cat((q_bias, zeros_like(v_bias), v_bias))`: the zeros are no input a kernel can
    take, so they become the right border of q_bias (a constant pad), then the cat and the biased linear."""
    doc = json.loads(run("contract", str(TRACED / "qkv_bias.py"), "--front-end", "traced", "--json").stdout)
    assert doc["supported"], doc["reason"]
    assert [k["ops"] for k in doc["kernels"]] == ["pad", "cat", "linear", "add"]
    pad = doc["kernels"][0]
    assert "F.pad(q_bias, [0, 96], value=0.0)" in pad["formula"] and pad["output_shape"] == [192]
