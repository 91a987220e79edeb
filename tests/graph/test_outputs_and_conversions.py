"""Three things models return that a one-output, float-only pipeline refused: a tuple of tensors (each
element a kernel's output, the composed forward returning them in order), an int8 tensor (round half to
even and the truncating conversion, written with pypto.cast as 0.2.0 computes them exactly), and the
values of torch.topk read from a traced graph (a mixture-of-experts router). The static reader and the
traced front end give the same graph and the same module."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract.aten import graph_from_trace
from pypto_tui.contract.graph import OpGraph
from pypto_tui.design import Design, Pipeline, kernel_of, module_plan_of, module_stages
from pypto_tui.lint.engine import lint_source
from pypto_tui.ops import registry

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TUPLE = FIX / "tasks_chain" / "tuple_return.py"
QUANT = FIX / "tasks_extra" / "quantize_int8.py"
GATE = FIX / "tasks_traced" / "topk_gate.py"
ENV = {"NO_COLOR": "1", "COLUMNS": "160"}


def _graph(kb, task: Path) -> OpGraph:
    c = Pipeline(kb, Design(task=str(task))).contract()
    assert c.graph is not None
    return OpGraph.from_data(c.graph)


def test_a_tuple_return_keeps_every_element_as_an_output(kb) -> None:
    g = _graph(kb, TUPLE)
    assert g.problems == ()
    assert [g.node(o).op for o in g.results] == ["relu", "mean"]
    assert g.output == g.results[0] and OpGraph.from_data(g.to_data()).results == g.results
    planned = module_plan_of(Pipeline(kb, Design(task=str(TUPLE))))
    assert planned is not None
    _, mp = planned
    # each returned tensor is written by a kernel; the relu's is also the mean's input, not a scratch tensor
    assert {grp.writes for grp in mp.groups} >= set(g.results)
    assert not set(mp.intermediates) & set(g.results)


def test_the_module_returns_the_tuple_in_the_tasks_order_and_lints_clean(kb) -> None:
    p = Pipeline(kb, Design(task=str(TUPLE)))
    k = kernel_of(p)
    assert k.supported and k.pattern == "module", k.reason
    relu, mean = (re.search(rf"(t_\w+) = self\._k{i}\(", k.source) for i in (1, 2))
    assert relu and mean
    assert f"return {relu.group(1)}, {mean.group(1)}" in k.source
    assert lint_source(k.source, "m.py", kb=kb, task_signature=p.contract().signature) == []


def test_the_contract_names_every_output() -> None:
    r = CliRunner().invoke(app, ["contract", str(TUPLE)], env=ENV)
    assert r.exit_code == 0, r.output
    assert "3 node(s), outputs n1, n2" in r.stdout and "output shapes  (64, 512), (64,)" in r.stdout
    data = json.loads(CliRunner().invoke(app, ["contract", str(TUPLE), "--json"], env=ENV).stdout)
    assert data["supported"] and data["graph"]["outputs"] == ["n1", "n2"]
    assert data["graph"]["output_shapes"] == [[64, 512], [64]]


def test_a_traced_tuple_return_is_the_same_graph() -> None:
    """The tracer's output list, as torch.export writes a returned tuple."""
    data = {"status": "ok", "placeholders": [{"name": "x", "kind": "input", "index": 0, "target": "x", "shape": [8, 32],
                                               "dtype": "fp32"}],
            "nodes": [{"name": "relu", "target": "aten.relu.default", "args": [{"node": "x"}], "shape": [8, 32],
                       "dtype": "fp32"},
                      {"name": "mean", "target": "aten.mean.dim", "args": [{"node": "relu"}, [1]], "shape": [8],
                       "dtype": "fp32"}],
            "output": [{"node": "relu"}, {"node": "mean"}]}
    g = graph_from_trace(data)
    assert g.problems == ()
    assert [g.node(o).op for o in g.results] == ["relu", "mean"]
    data["output"] = [{"node": "relu"}, 3]
    assert any("not a tensor" in p for p in graph_from_trace(data).problems)


def test_int8_quantisation_reads_as_one_kernel_that_rounds_and_truncates_with_casts(kb) -> None:
    p = Pipeline(kb, Design(task=str(QUANT)))
    c = p.contract()
    assert c.supported and c.output_dtype == "int8", c.reason
    k = kernel_of(p)
    assert k.supported, k.reason
    # round half to even: to int32 with CAST_RINT and back (pypto.round takes rank 2..4 only)
    assert "pypto.cast(pypto.cast(x / scale, pypto.DT_INT32, mode=pypto.CastMode.CAST_RINT), pypto.DT_FP32)" in k.source
    # the conversion truncates as torch does (the default mode rounds)
    assert "pypto.DT_INT8, mode=pypto.CastMode.CAST_TRUNC)" in k.source
    assert "out: pypto.Tensor((flat_size,), pypto.DT_INT8)" in k.source and "dtype=torch.int8" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=c.signature) == []


@pytest.mark.parametrize("spelling", ["x.to(torch.int8)", "x.to(dtype=torch.int8)", "x.char()", "x.type(torch.int8)"])
def test_every_spelling_of_the_int8_conversion_is_the_same_kind(kb, tmp_path: Path, spelling: str) -> None:
    task = tmp_path / "t.py"
    task.write_text(QUANT.read_text().replace(
        "torch.clamp(torch.round(x / self.scale), -128, 127).to(torch.int8)",
        spelling.replace("x", "torch.clamp(x, -128, 127)", 1)))
    g = _graph(kb, task)
    assert [n.op for n in g.nodes] == ["clamp", "char"] and g.node(g.output).dtype == "int8"


def test_the_conversion_kinds_reference_truncates_and_round_is_half_to_even() -> None:
    char, rnd = registry.kind("char"), registry.kind("round")
    assert char is not None and rnd is not None and registry.conversion_to("int8") is char
    x = np.array([-2.5, -1.7, -0.5, 0.5, 1.5, 2.5, 126.9])
    assert char.reference(x).tolist() == [-2, -1, 0, 0, 1, 2, 126] and char.reference(x).dtype == np.int8
    assert rnd.reference(x).tolist() == [-2.0, -2.0, -0.0, 0.0, 2.0, 2.0, 127.0]


def test_a_traced_router_reads_topks_values_and_indices_in_the_order_forward_reads_them(kb) -> None:
    g = graph_from_trace(json.loads((FIX / "traces" / "topk_gate.json").read_text()))
    assert g.problems == ()
    assert [n.op for n in g.nodes] == ["linear", "softmax", "topk", "sum", "div", "topk_indices"]
    assert [g.node(o).op for o in g.results] == ["div", "topk_indices"]
    topk, indices = g.nodes[2], g.nodes[5]
    assert topk.attrs == indices.attrs and topk.attrs["k"] == 4 and topk.shape == indices.shape == (128, 4)
    assert (topk.dtype, indices.dtype) == ("fp32", "int64")
    # the static reader gives the same graph, so the same module
    static = _graph(kb, GATE)
    assert [(n.op, n.shape, n.dtype) for n in static.nodes] == [(n.op, n.shape, n.dtype) for n in g.nodes]


GATHER_TASK = ("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def forward(self, x, index):\n"
               "        return torch.gather(x, {dim}, index)\n\n\ndef get_inputs():\n"
               "    return [torch.randn(128, 512), {index}]\n\n\ndef get_init_inputs():\n    return []\n")


def test_a_gather_task_is_one_pypto_gather_with_an_int64_index(kb, tmp_path: Path) -> None:
    task = tmp_path / "g.py"
    task.write_text(GATHER_TASK.format(dim=-1, index="torch.randint(0, 512, (128, 8))"))
    p = Pipeline(kb, Design(task=str(task)))
    c = p.contract()
    assert (c.family, c.op, c.supported, c.output_shape, c.output_dtype) == ("layout", "gather", True, (128, 8),
                                                                             "fp32"), c.reason
    assert c.asymmetric and "index their positions" in (c.direction or "")
    k = kernel_of(p)
    assert k.supported and k.pattern == "gather", k.reason
    assert "out.move(pypto.gather(x, 1, index))" in k.source
    assert "index: pypto.Tensor((i0, i1), pypto.DT_INT64)" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=c.signature) == []
    values = np.arange(12.0).reshape(3, 4)
    gather = registry.kind("gather")
    assert gather is not None and gather.index_inputs == (1,)
    assert gather.reference(values, np.array([[3, 0], [1, 1], [2, 3]]), dim=1).tolist() == [[3, 0], [5, 5], [10, 11]]


def test_a_gather_whose_index_is_not_integer_says_so(kb, tmp_path: Path) -> None:
    task = tmp_path / "g.py"
    task.write_text(GATHER_TASK.format(dim=1, index="torch.randn(128, 8)"))
    c = Pipeline(kb, Design(task=str(task))).contract()
    assert not c.supported and "index is fp32: torch takes int64 positions" in c.reason


def test_a_routers_gather_reads_topks_indices_and_its_own_test_draws_them_within_the_axis(kb) -> None:
    task = FIX / "tasks_traced" / "topk_gather.py"
    static, traced = _graph(kb, task), graph_from_trace(json.loads((FIX / "traces" / "topk_gather.json").read_text()))
    assert [(n.op, n.shape, n.dtype) for n in static.nodes] == [(n.op, n.shape, n.dtype) for n in traced.nodes] == [
        ("linear", (128, 64), "fp32"), ("softmax", (128, 64), "fp32"), ("topk_indices", (128, 4), "int64"),
        ("gather", (128, 4), "fp32")]
    stages = module_stages(Pipeline(kb, Design(task=str(task))))
    assert stages is not None and not stages.refused, stages
    gather = stages.stages[-1].pipeline.contract()
    index = gather.inputs[1]
    assert index.dtype == "int64" and index.recipe["fn"] == "randint" and index.recipe["high"] == 64


def test_a_gather_the_shapes_rule_out_says_which_shapes_and_why(kb, tmp_path: Path) -> None:
    task = tmp_path / "g.py"
    task.write_text(GATHER_TASK.format(dim=1, index="torch.randint(0, 512, (256, 8))"))
    k = kernel_of(Pipeline(kb, Design(task=str(task))))
    assert not k.supported
    assert "output_shape: gather's index (256, 8) is larger than its input (128, 512) on an axis other than 1" \
        in k.reason
