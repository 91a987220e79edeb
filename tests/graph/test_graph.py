"""The contract as a graph (issue 21): nodes from the registry, parameters created in __init__,
shapes flowing through the chain, a level-1 task as one node, and the CLI's `graph` key."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.graph import OpGraph

FIX = Path(__file__).resolve().parents[1] / "fixtures"
EXTRA = FIX / "tasks_extra"


def graph_of(path: Path) -> OpGraph:
    c = extract_contract(path)
    assert c.graph is not None
    return OpGraph.from_data(c.graph)


def test_a_level2_chain_is_a_graph_with_its_parameters_and_shapes():
    g = graph_of(EXTRA / "gemm_scale_bias_relu_bn_sum.py")
    assert [n.op for n in g.nodes] == ["linear", "mul", "add", "relu", "batch_norm", "sigmoid", "sum"]
    linear = g.nodes[0]
    assert linear.inputs == ("x", "gemm.weight", "gemm.bias") and linear.shape == (128, 32)
    assert g.value("gemm.weight").shape == (32, 64) and g.value("gemm.bias").shape == (32,)
    assert g.value("bias").kind == "param" and g.value("bias").shape == (32,)  # an nn.Parameter
    bn = g.node("n4")
    assert bn.inputs[1:] == ("bn.weight", "bn.bias", "bn.running_mean", "bn.running_var")
    assert g.output == "n6" and g.shape_of("n6") == (128, 1)
    scale = g.value(g.node("n1").inputs[1])
    assert (scale.kind, scale.value, scale.source) == ("const", 0.5, "self.scale")
    assert [a.op for a in g.anchors] == ["linear", "batch_norm", "sum"]
    assert ("n3", "n4", 0) in g.edges() and not g.problems


def test_shapes_flow_through_conv_pool_and_views_and_dropout_is_flagged():
    g = graph_of(EXTRA / "conv_pool_dropout.py")
    shapes = {n.op: n.shape for n in g.nodes}
    assert shapes["conv"] == (4, 16, 17, 17)  # (33 + 2 - 3) // 2 + 1
    assert shapes["max_pool"] == (4, 16, 8, 8)
    assert shapes["adaptive_avg_pool"] == (4, 16, 1, 1)
    assert g.shape_of(g.output) == (4, 16)  # flatten(1)
    assert g.value("conv.weight").shape == (16, 3, 3, 3)
    assert any("dropout" in note and "random" in note for note in g.notes)


def test_a_level1_task_is_a_graph_of_one_node():
    for name, op in (("softmax_rows.py", "softmax"), ("elu.py", "elu"), ("matmul_tall.py", "matmul"),
                     ("group_norm.py", "group_norm")):
        g = graph_of(FIX / "tasks" / name)
        assert [n.op for n in g.nodes] == [op], name
        c = extract_contract(FIX / "tasks" / name)
        assert g.shape_of(g.output) == c.output_shape, name


def test_an_operator_outside_the_registry_is_a_problem_with_its_name():
    g = graph_of(EXTRA / "unknown_op.py")
    assert g.problems and "not in the operator registry" in g.problems[0]


def test_the_graph_survives_the_session_round_trip():
    from pypto_tui.contract.model import Contract

    c = extract_contract(EXTRA / "gemm_scale_bias_relu_bn_sum.py")
    again = Contract.from_dict(json.loads(json.dumps(c.to_dict())))
    assert OpGraph.from_data(again.graph).to_data() == OpGraph.from_data(c.graph).to_data()


@pytest.mark.slow
def test_contract_json_has_the_graph_and_the_text_shows_it():
    cli = [sys.executable, "-m", "pypto_tui", "contract", str(EXTRA / "gemm_scale_bias_relu_bn_sum.py")]
    doc = json.loads(subprocess.run([*cli, "--json"], capture_output=True, text=True, check=False).stdout)
    assert {"family", "op", "formula", "dims"} <= set(doc)  # the old keys stay
    graph = doc["graph"]
    assert graph["nodes"][0]["op"] == "linear" and graph["output_shape"] == [128, 1]
    assert {"from": "x", "to": "n0", "port": 0} in graph["edges"]
    text = subprocess.run(cli, capture_output=True, text=True, check=False, env={"COLUMNS": "200", "PATH": ""}).stdout
    assert "graph: 7 node(s), output n6" in text and "gemm.weight (32, 64)" in text


def test_a_node_never_takes_the_id_of_an_input():
    """A kernel's forward names its inputs by the module graph's value ids (n0, n3): its own graph's nodes
    must not reuse them, or a node's shape would stand for its input's."""
    from pypto_tui.contract import ir
    from pypto_tui.contract.graph import build_graph
    from pypto_tui.contract.model import Input

    n0, n1 = ir.Node("in", "n0", value=0), ir.Node("in", "n1", value=1)
    root = ir.Node("bin", "add", (ir.Node("bin", "mul", (n0, n1)), n0))
    inputs = [Input(name=n, kind="tensor", shape=(4, 8), dtype="fp32") for n in ("n0", "n1")]
    g = build_graph(root, inputs)
    assert len(g.nodes) == 2 and not {n.id for n in g.nodes} & {"n0", "n1"}
    assert g.nodes[1].inputs == (g.nodes[0].id, "n0") and g.output == g.nodes[1].id
