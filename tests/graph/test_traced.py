"""The traced front end without torch: the converter from a stored trace (tests/fixtures/traces, the
tracer's JSON for the fixture of the same name, made once by `pypto_tui/trace/runner.py`) to the OpGraph,
against the static reader's graph of the same task, and `contract --front-end` reading a cached trace."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.contract.aten import PROBLEM_CHARS, graph_from_trace
from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.graph import OpGraph
from pypto_tui.ops.registry import REGISTRY, by_aten
from pypto_tui.plan import decompose, fusion_rules, partition

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRACES = FIX / "traces"
TRACED_TASKS = FIX / "tasks_traced"


def trace(name: str) -> dict:
    return json.loads((TRACES / f"{name}.json").read_text())


def kernels(g: OpGraph) -> list[list[str]]:
    """Each kernel group's operators, in order (what both front ends must agree on)."""
    d = decompose(g)
    return [[d.node(n).op for n in grp.nodes] for grp in partition(d, fusion_rules(None)).groups]


def static_graph(path: Path) -> OpGraph:
    c = extract_contract(path)
    assert c.graph is not None
    return OpGraph.from_data(c.graph)


def test_every_aten_name_belongs_to_one_kind():
    seen: dict[str, str] = {}
    for k in REGISTRY.values():
        for name in k.aten:
            assert name.startswith("aten.") and name.count(".") == 2, name
            assert seen.setdefault(name, k.name) == k.name, (name, seen[name], k.name)
    assert by_aten("aten.convolution.default").name == "conv" and by_aten("aten.max.dim").name == "max_dim"
    assert by_aten("aten.upsample_nearest2d.vec") is None


def test_a_resnet_block_reads_the_same_graph_as_the_static_reader():
    traced = graph_from_trace(trace("resnet_basic_block"))
    static = static_graph(FIX / "tasks_chain" / "resnet_basic_block.py")
    assert not traced.problems
    assert [(n.op, n.inputs, n.shape, n.role) for n in traced.nodes] == \
        [(n.op, n.inputs, n.shape, n.role) for n in static.nodes]
    for t, s in zip(traced.nodes, static.nodes, strict=True):  # the module's constructor arguments, read back
        assert dict(t.attrs) == dict(s.attrs), t.id
        if s.spelling.startswith("nn."):  # nn.Conv2d self.conv1: group_facts calls the task's own module
            assert t.spelling == s.spelling
    params = {v.id: (v.shape, v.source) for v in traced.values if v.kind == "param"}
    assert params == {v.id: (v.shape, v.source) for v in static.values if v.kind == "param"}
    # the block calls self.eval() in __init__: both front ends read its BatchNorms in eval mode, where each is a
    # per-channel affine map with the module's running statistics (no statistic computed: elementwise kernels)
    assert [dict(n.attrs).get("training") for n in traced.nodes if n.op == "batch_norm"] == [False, False]
    bn_eval = ["sub", "add", "rsqrt", "mul", "mul", "add"]
    assert kernels(traced) == kernels(static) == [["conv"], [*bn_eval, "relu"], ["conv"], [*bn_eval, "add", "relu"]]
    assert any("eval mode" in n and "running statistics" in n for n in traced.notes)
    transposed = graph_from_trace(_graph([_node("p", "aten.permute.default", [{"node": "x"}, [0, 1, 3, 2]],
                                                [2, 4, 8, 8])], "p"))
    assert (transposed.nodes[0].op, dict(transposed.nodes[0].attrs)) == ("transpose", {"dim0": 2, "dim1": 3})


@pytest.mark.parametrize(("name", "ops"), [
    ("sequential_mlp", ["linear", "relu", "linear", "relu", "linear"]),
    ("modulelist_loop", ["linear", "tanh", "add"] * 3),
    ("helper_function", ["linear", "gelu", "mul"]),
    ("if_attribute", ["conv", "relu"]),
    ("shape_unpack", ["linear", "view", "view", "transpose", "bmm", "div", "softmax"]),
])
def test_constructs_the_static_reader_refuses_are_read_by_tracing(name, ops):
    static = static_graph(TRACED_TASKS / f"{name}.py")
    g = graph_from_trace(trace(name))
    assert not g.problems, g.problems
    if name == "shape_unpack":  # `b, t, d = x.shape` is read statically too: the sizes get_inputs gives
        assert not static.problems and kernels(static) == kernels(g)
    else:
        assert static.problems  # nn.Sequential, a loop, a helper, an if
    assert [n.op for n in g.nodes] == ops
    assert g.shape_of(g.output) == tuple(trace(name)["nodes"][-1]["shape"])
    d = decompose(g)  # the partition takes the traced graph as it takes a static one: each operator in order,
    groups = kernels(g)  # at most one anchor a kernel
    assert [op for grp in groups for op in grp if op != "view"] == [n.op for n in d.nodes if n.op != "view"]
    roles = {n.op: n.role for n in d.nodes}
    assert all(sum(roles[op] not in ("elementwise", "view", "layout") for op in grp) <= 1 for grp in groups)


def test_parameters_keep_their_module_path():
    g = graph_from_trace(trace("sequential_mlp"))
    w = g.value("net_2.weight")
    assert (w.kind, w.shape, w.source) == ("param", (128, 128), "nn.Linear self.net.2")
    assert g.node("n2").spelling == "nn.Linear self.net_2"
    split = graph_from_trace(trace("shape_unpack"))
    assert [dict(split.node(n).attrs)["steps"][0].to_data() for n in ("n1", "n2")] == [
        {"kind": "narrow", "dim": 2, "start": 0, "length": 64}, {"kind": "narrow", "dim": 2, "start": 64, "length": 64}]


def _node(name, target, args, shape, module="", module_type="Model", **kw):
    return {"name": name, "target": target, "args": args, "kwargs": {}, "module": module, "module_type": module_type,
            "shape": shape, "dtype": "fp32", **kw}


def _graph(nodes, output):
    return {"status": "ok", "torch_version": "2.13.0+cpu", "placeholders": [
        {"name": "x", "kind": "input", "target": "x", "shape": [2, 4, 8, 8], "dtype": "fp32", "index": 0}],
        "nodes": nodes, "output": [{"node": output}]}


def test_a_batch_norm_built_in_training_mode_takes_the_batch_statistics_as_verify_baseline_does():
    """The tracer exports in eval mode, but verify's baseline runs Model as built: a BatchNorm the task never
    puts in eval mode (KernelBench's default) keeps the batch's statistics, as the static reader reads it, and a
    Dropout in training mode with p > 0 is named (its baseline is random)."""
    data = trace("resnet_basic_block")
    data["modes"] = [{**m, "training": True} for m in data["modes"]] + [
        {"path": "drop", "type": "Dropout", "training": True, "p": 0.5}]
    g = graph_from_trace(data)
    assert [dict(n.attrs).get("training") for n in g.nodes if n.op == "batch_norm"] == [None, None]
    assert kernels(g) == [["conv"], ["batch_norm"], ["relu"], ["conv"], ["batch_norm"], ["add", "relu"]]
    assert any("training mode" in n and "batch's statistics" in n for n in g.notes)
    assert any(n.startswith("nn.Dropout self.drop is in training mode with p=0.5") for n in g.notes)


def test_nested_modules_keep_their_path_for_the_composed_module():
    """nn.Sequential(Block, ReLU, Block): ids and spellings use one attribute name per submodule
    (`blocks_0_conv`), and the graph keeps the path the composed module reaches it by (`blocks.0.conv`)."""
    g = graph_from_trace(trace("nested_bn_eval"))
    assert not g.problems
    assert dict(g.paths) == {"blocks_0_bn": "blocks.0.bn", "blocks_0_conv": "blocks.0.conv", "blocks_1": "blocks.1",
                             "blocks_2_bn": "blocks.2.bn", "blocks_2_conv": "blocks.2.conv"}
    assert g.node("n0").spelling == "nn.Conv2d self.blocks_0_conv"
    assert OpGraph.from_data(g.to_data()).paths == g.paths


def test_an_unknown_operator_is_one_short_line_naming_it_and_its_submodule():
    data = _graph([_node("up", "aten.upsample_nearest2d.vec", [{"node": "x"}, None, [2.0, 2.0]], [2, 4, 16, 16],
                         module="decoder.blocks.3.up" + ".deep" * 60, module_type="Upsample"),
                   _node("relu", "aten.relu.default", [{"node": "up"}], [2, 4, 16, 16])], "relu")
    g = graph_from_trace(data)
    assert len(g.problems) == 1
    p = g.problems[0]
    assert p.startswith("aten.upsample_nearest2d.vec in self.decoder.blocks.3.up.deep")
    assert "\n" not in p and len(p) <= PROBLEM_CHARS
    assert [n.op for n in g.nodes] == ["unknown", "relu"] and g.output == "n1"


def test_an_unknown_operator_names_the_task_files_line_it_was_traced_from():
    data = _graph([_node("u", "aten.reflection_pad2d.default", [{"node": "x"}, [1, 1, 1, 1]], [2, 4, 10, 10], line=55),
                   _node("relu", "aten.relu.default", [{"node": "u"}], [2, 4, 10, 10])], "relu")
    (p,) = graph_from_trace(data).problems
    assert p.startswith("aten.reflection_pad2d.default in forward, line 55: not in the operator registry")
    # a trace without lines (an older cache entry, a frame outside the task file) names none
    del data["nodes"][0]["line"]
    assert graph_from_trace(data).problems[0].startswith("aten.reflection_pad2d.default in forward: ")


def test_a_max_pools_indices_read_are_a_problem_its_values_are_not():
    pool = _node("mp", "aten.max_pool2d_with_indices.default", [{"node": "x"}, [2, 2], [2, 2]], None,
                 module="pool", module_type="MaxPool2d")
    values = _node("v", "getitem", [{"node": "mp"}, 0], [2, 4, 4, 4])
    g = graph_from_trace(_graph([pool, values], "v"))
    assert not g.problems and g.node("n0").op == "max_pool" and g.node("n0").shape == (2, 4, 4, 4)
    assert g.node("n0").spelling == "nn.MaxPool2d self.pool"
    indices = _node("i", "getitem", [{"node": "mp"}, 1], [2, 4, 4, 4])
    g = graph_from_trace(_graph([pool, values, indices], "i"))
    assert g.problems == ("aten.max_pool2d_with_indices.default in self.pool (MaxPool2d): its indices are read; "
                          "the graph keeps the first output only",)


def test_scalars_and_addmm_become_the_static_readers_nodes():
    data = _graph([
        _node("flat", "aten.view.default", [{"node": "x"}, [2, -1]], [2, 256]),
        _node("half", "aten.mul.Tensor", [{"node": "flat"}, 0.5], [2, 256]),
        _node("one_minus", "aten.rsub.Scalar", [{"node": "half"}, 1.0], [2, 256]),
        _node("mm", "aten.addmm.default", [{"node": "b"}, {"node": "one_minus"}, {"node": "wt"}], [2, 16]),
    ], "mm")
    data["placeholders"] += [
        {"name": "b", "kind": "parameter", "target": "fc.bias", "shape": [16], "dtype": "fp32"},
        {"name": "wt", "kind": "parameter", "target": "fc.weight_t", "shape": [256, 16], "dtype": "fp32"}]
    g = graph_from_trace(data)
    assert not g.problems
    assert [(n.op, n.inputs) for n in g.nodes] == [
        ("view", ("x",)), ("mul", ("n0", "c0")), ("sub", ("c1", "n1")), ("matmul", ("n2", "fc.weight_t")),
        ("add", ("n3", "fc.bias"))]
    assert g.value("c1").value == 1.0 and g.shape_of("n4") == (2, 16)


def test_a_shape_the_registry_disagrees_with_is_a_problem():
    g = graph_from_trace(_graph([_node("s", "aten.sum.dim_IntList", [{"node": "x"}, [1], True], [2, 4, 8, 8])], "s"))
    assert g.problems == ("aten.sum.dim_IntList: the registry's shape (2, 1, 8, 8) is not the traced (2, 4, 8, 8)",)


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(app, list(args), env={"NO_COLOR": "1", "COLUMNS": "160", **(env or {})})


def test_a_front_end_that_does_not_exist_is_one_line_and_exit_2():
    r = run("contract", str(TRACED_TASKS / "if_attribute.py"), "--front-end", "dynamo")
    assert r.exit_code == 2
    assert "--front-end is static or traced, not 'dynamo'" in r.output and "Traceback" not in r.output


def test_contract_reads_a_cached_trace_and_says_which_front_end(tmp_path):
    """A trace in the cache (keyed by the file's content, torch's version and the pack) is read back: the
    task's code does not run again, and the JSON names the front end."""
    pytest.importorskip("importlib.metadata")
    from pypto_tui.kb import bundled_pack_dir, get_kb
    from pypto_tui.sim.cache import ResultCache
    from pypto_tui.trace.tracer import pack_id, torch_version, trace_key

    version = torch_version(sys.executable)
    if version is None:
        pytest.skip("torch is not installed: the cache key names its version")
    task = TRACED_TASKS / "sequential_mlp.py"
    key = trace_key(task.read_bytes(), version, pack_id(get_kb(bundled_pack_dir())))
    ResultCache(tmp_path / "traces").put(key, trace("sequential_mlp"))
    r = run("contract", str(task), "--front-end", "traced", "--json", env={"PYPTO_TUI_CACHE_DIR": str(tmp_path)})
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["front_end"] == "traced" and doc["supported"]
    ops = [op for k in doc["kernels"] for op in k["ops"].split(", ")]
    assert ops == ["linear", "add", "relu", "linear", "add", "relu", "linear", "add"]  # the biased linears' adds
    assert [k["ops"].split(", ")[0] for k in doc["kernels"]].count("linear") == 3
    assert [n["op"] for n in doc["graph"]["nodes"]] == ["linear", "relu", "linear", "relu", "linear"]
    static = json.loads(run("contract", str(task), "--json").stdout)
    assert static["front_end"] == "static" and not static["supported"] and not static["kernels"]


def test_a_recurrent_layer_it_refuses_is_one_problem_and_checks_are_no_nodes():
    """nn.LSTM stays one ATen node (the tracer keeps it whole): one without biases, which no kernel takes
    yet, is one problem, its outputs read through it are no more problems, and the shape after it still
    follows; torch.export's own checks are left out."""
    lstm = _node("lstm", "aten.lstm.input", [{"node": "x"}, [], [], False, 1, 0.0, False, False, True], None,
                 module="rnn", module_type="LSTM", shapes=[{"shape": [2, 4, 8, 8]}])
    out = _node("out", "getitem", [{"node": "lstm"}, 0], [2, 4, 8, 8])
    check = _node("chk", "aten._assert_tensor_metadata.default", [{"node": "out"}], None)
    act = _node("act", "aten.relu.default", [{"node": "out"}], [2, 4, 8, 8])
    g = graph_from_trace(_graph([lstm, out, check, act], "act"))
    assert len(g.problems) == 1
    assert g.problems[0].startswith("aten.lstm.input in self.rnn (LSTM): an LSTM without biases is not scaffolded")
    assert "bias=True" in g.problems[0]  # what does work
    assert [n.op for n in g.nodes] == ["unknown", "unknown", "relu"] and g.shape_of("n2") == (2, 4, 8, 8)


def test_a_masked_fill_reads_its_fill_as_a_constant_and_a_rotation_is_rotate_half():
    """masked_fill(mask, -inf) is traced as where(mask, scalar_tensor(-inf), x); cat((-x[..., h:], x[..., :h]))
    as slices, a neg and a cat, which is the static reader's rotate_half (its fold, contract/rope.py), and
    the slices it leaves unread are no nodes."""
    data = _graph([
        _node("hi", "aten.slice.Tensor", [{"node": "x"}, 3, 4, 9223372036854775807], [2, 4, 8, 4]),
        _node("neg", "aten.neg.default", [{"node": "hi"}], [2, 4, 8, 4]),
        _node("lo", "aten.slice.Tensor", [{"node": "x"}, 3, 0, 4], [2, 4, 8, 4]),
        _node("rot", "aten.cat.default", [[{"node": "neg"}, {"node": "lo"}], -1], [2, 4, 8, 8]),
        _node("mask", "aten.gt.Scalar", [{"node": "x"}, 0.0], [2, 4, 8, 8], dtype="bool"),
        _node("fill", "aten.scalar_tensor.default", [{"float": "-inf"}], []),
        _node("w", "aten.where.self", [{"node": "mask"}, {"node": "fill"}, {"node": "rot"}], [2, 4, 8, 8]),
    ], "w")
    g = graph_from_trace(data)
    assert not g.problems
    assert [(n.op, n.inputs) for n in g.nodes] == [("rotate_half", ("x",)), ("gt", ("x", "c0")),
                                                   ("where", ("n4", "c1", "n3"))]
    assert g.value("c1").value == float("-inf") and g.node("n4").dtype == "bool"


def test_a_fill_with_a_shape_is_a_constant_of_that_shape():
    """cat((q_bias, zeros_like(v_bias), v_bias)): the zeros are a constant of v_bias's shape, so the cat's
    shape follows; inside the cat they are the right border of the part before them (a pad)."""
    data = _graph([_node("z", "aten.full_like.default", [{"node": "b"}, 0], [4]),
                   _node("c", "aten.cat.default", [[{"node": "b"}, {"node": "z"}, {"node": "b"}]], [12])], "c")
    data["placeholders"].append({"name": "b", "kind": "parameter", "target": "attn.v_bias", "shape": [4],
                                 "dtype": "fp32"})
    g = graph_from_trace(data)
    assert not g.problems and g.shape_of(g.output) == (12,)
    assert [(n.op, n.shape) for n in g.nodes] == [("pad", (8,)), ("cat", (12,))]
    assert dict(g.nodes[0].attrs)["pad"] == (0, 4) and dict(g.nodes[0].attrs)["value"] == 0.0


def test_a_random_draw_in_forward_says_to_pass_the_tensor_in():
    """KernelBench's LSTM tasks draw h0 with torch.randn inside forward: no kernel can draw the same
    numbers, and the one line says what to do instead."""
    draw = _node("h0", "aten.randn.default", [[2, 4, 8, 8]], [2, 4, 8, 8])
    act = _node("act", "aten.add.Tensor", [{"node": "x"}, {"node": "h0"}], [2, 4, 8, 8])
    g = graph_from_trace(_graph([draw, act], "act"))
    assert g.problems == ("aten.randn.default in forward: forward draws random numbers, which no kernel can "
                          "reproduce: pass the tensor from get_inputs() instead",)


def _cached_trace(tmp_path: Path, task: Path, data: dict) -> dict[str, str]:
    """`data` in a trace cache under tmp_path, keyed as the tracer keys `task`; the env that reads it."""
    from pypto_tui.kb import bundled_pack_dir, get_kb
    from pypto_tui.sim.cache import ResultCache
    from pypto_tui.trace.tracer import pack_id, torch_version, trace_key

    version = torch_version(sys.executable)
    if version is None:
        pytest.skip("torch is not installed: the cache key names its version")
    key = trace_key(task.read_bytes(), version, pack_id(get_kb(bundled_pack_dir())))
    ResultCache(tmp_path / "traces").put(key, data)
    return {"PYPTO_TUI_CACHE_DIR": str(tmp_path)}


def test_a_traced_task_the_trace_cannot_read_is_refused_with_the_traces_reason(tmp_path):
    """The static reader stops at the `if`; the trace runs through it. When the trace has a node it cannot
    read, every answer (contract's reason and findings, scaffold's refusal) names that node, never the
    static reader's 'If' statement."""
    task = TRACED_TASKS / "if_attribute.py"
    data = trace("if_attribute")
    data["nodes"][1]["target"] = "aten.upsample_nearest2d.vec"
    env = _cached_trace(tmp_path, task, data)
    r = run("contract", str(task), "--front-end", "traced", "--json", env=env)
    doc = json.loads(r.stdout)
    assert not doc["supported"] and doc["kernels"] == []
    assert doc["reason"].startswith("the traced graph: aten.upsample_nearest2d.vec in forward: not in the operator")
    assert all(v == doc["reason"] for k, v in doc["unknown_reasons"].items() if not k.startswith("init_params"))
    assert not any("'If'" in f["message"] for f in doc["findings"])
    out = tmp_path / "module.py"
    r = run("scaffold", str(task), "--front-end", "traced", "-o", str(out), env=env)
    assert "unsupported: the traced graph: aten.upsample_nearest2d.vec" in r.output and "'If'" not in r.output
    static = json.loads(run("contract", str(task), "--json").stdout)
    assert "'If' statement" in static["reason"]  # the static reader's own answer is unchanged


def _with_params(data: dict, *params: tuple[str, list[int], str]) -> dict:
    data["placeholders"] += [{"name": n, "kind": "parameter", "target": n, "shape": s, "dtype": d}
                             for n, s, d in params]
    return data


def test_a_table_indexed_by_one_tensor_is_an_embedding_and_by_two_is_one_problem():
    one = _with_params(_graph([_node("t", "aten.index.Tensor", [{"node": "table"}, [{"node": "idx"}]], [5, 3])], "t"),
                       ("table", [7, 3], "fp32"), ("idx", [5], "int64"))
    g = graph_from_trace(one)
    assert not g.problems and [(n.op, n.inputs) for n in g.nodes] == [("embedding", ("idx", "table"))]
    two = _with_params(_graph([_node("t", "aten.index.Tensor", [{"node": "table"}, [{"node": "idx"}, {"node": "idx"}]],
                                     [5])], "t"), ("table", [7, 3], "fp32"), ("idx", [5], "int64"))
    (p,) = graph_from_trace(two).problems
    assert p.startswith("aten.index.Tensor in forward") and "one integer index tensor" in p


def test_a_leading_fill_in_a_concatenation_is_a_left_pad_of_the_next_part_and_equal_shifts_stay_two():
    data = _with_params(_graph([
        _node("z", "aten.full.default", [[4], 0.5], [4]),
        _node("cat", "aten.cat.default", [[{"node": "z"}, {"node": "b"}]], [10]),
        _node("r", "aten.roll.default", [{"node": "x"}, [-1, -1], [2, 3]], [2, 4, 8, 8]),
    ], "cat"), ("b", [6], "fp32"))
    data["output"] = [{"node": "cat"}, {"node": "r"}]
    g = graph_from_trace(data)
    assert not g.problems
    pad = next(n for n in g.nodes if n.op == "pad")
    assert pad.inputs == ("b",) and dict(pad.attrs)["pad"] == (4, 0) and dict(pad.attrs)["value"] == 0.5
    assert not any(n.op == "cat" for n in g.nodes)  # one part left: the pad is the result
    roll = next(n for n in g.nodes if n.op == "roll")
    assert dict(roll.attrs) == {"shifts": (-1, -1), "dims": (2, 3)}
