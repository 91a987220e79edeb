"""The module plan (issue 21 step 2): a graph split into kernels by the pack's fusion rules, each
kernel designed as a task of its own, and one module that runs them in order."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import tiered

from pypto_tui.contract.extract import extract_contract
from pypto_tui.contract.graph import OpGraph
from pypto_tui.contract.group import contract_of
from pypto_tui.design import Design, Pipeline, kernel_of, module_plan_of
from pypto_tui.kb import get_kb
from pypto_tui.plan import FusionRule, decompose, fusion_rules, partition

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"


@pytest.fixture(scope="module")
def kb():
    return get_kb()


def graph(name: str) -> OpGraph:
    return decompose(OpGraph.from_data(extract_contract(EXTRA / name).graph))


def test_a_biased_linear_is_a_product_then_an_add_of_its_bias():
    g = graph("gemm_scale_leaky_relu.py")
    assert [(n.id, n.op) for n in g.nodes] == [("n0m", "linear"), ("n0", "add"), ("n1", "mul"), ("n2", "leaky_relu")]
    assert g.node("n0").inputs == ("n0m", "gemm.bias")


def test_the_pack_keeps_a_gemm_apart_from_its_epilogue_and_chains_the_elementwise_ops():
    rules = fusion_rules(None)
    assert {r.id for r in rules} >= {"FUSE.matmul-separate", "FUSE.elementwise-chain"}
    mp = partition(graph("gemm_scale_leaky_relu.py"), rules)
    assert [g.nodes for g in mp.groups] == [("n0m",), ("n0", "n1", "n2")]
    assert mp.groups[1].reads == ("n0m", "gemm.bias", "c0") and mp.intermediates == ("n0m",)
    assert [g.rule for g in mp.groups] == ["FUSE.matmul-separate", "FUSE.elementwise-chain"]


def test_a_fusion_rule_that_takes_the_epilogue_puts_it_in_the_anchors_kernel():
    fused = (FusionRule("T.fuse", "matmul", (), ("add", "mul"), "test"),
             FusionRule("T.chain", "elementwise", ("*",), ("*",), "test"))
    mp = partition(graph("gemm_scale_leaky_relu.py"), fused)
    assert [g.nodes for g in mp.groups] == [("n0m", "n0", "n1"), ("n2",)]  # leaky_relu is not taken


def test_kernels_read_only_earlier_kernels():
    mp = partition(graph("gemm_scale_bias_relu_bn_sum.py"), fusion_rules(None))
    written = {g.writes: g.index for g in mp.groups}
    for g in mp.groups:
        assert all(written.get(r, -1) < g.index for r in g.reads), g


def test_a_kernels_contract_comes_from_its_group_of_the_graph(kb):
    g = graph("gemm_scale_leaky_relu.py")
    mp = partition(g, fusion_rules(None))
    c, reads, modules = contract_of(g, mp.groups[1], kb, "t")
    assert reads == ("n0m", "gemm.bias") and modules == ()
    assert (c.family, c.op, c.supported, c.output_shape) == ("elementwise", "expression", True, (64, 192))
    assert [i.name for i in c.tensor_inputs] == ["n0m", "gemm_bias"]
    assert c.formula is not None and "leaky_relu" in c.formula


def test_a_one_operator_task_and_a_chains_kernel_take_the_same_contract_path(kb, monkeypatch):
    """A task file's contract and a chain kernel's are both `contract_from_facts` of the reader's facts:
    no kernel is written out as PyTorch text and parsed again."""
    import pypto_tui.contract.extract as extract
    import pypto_tui.contract.group as group
    import pypto_tui.contract.reader as reader

    calls: list[str | None] = []
    real = extract.contract_from_facts

    def spy(facts, *a, **k):
        calls.append(facts.path)
        return real(facts, *a, **k)

    monkeypatch.setattr(extract, "contract_from_facts", spy)
    monkeypatch.setattr(group, "contract_from_facts", spy)
    parsed: list[int] = []
    real_read = reader.read_task
    monkeypatch.setattr(extract, "read_task", lambda src, path=None: parsed.append(1) or real_read(src, path))
    k = kernel_of(Pipeline(kb, Design(task=str(EXTRA / "gemm_scale_leaky_relu.py"))))
    assert k.supported and k.pattern == "module"
    assert len(parsed) == 1  # the task file, once; never a kernel's text
    assert calls[0] is not None and calls[0].endswith("gemm_scale_leaky_relu.py") and calls[1:] == [None, None]


def test_a_module_of_two_kernels_for_a_gemm_and_its_epilogue(kb):
    p = Pipeline(kb, Design(task=str(EXTRA / "gemm_scale_leaky_relu.py")))
    assert not p.contract().supported  # the level-1 view of the task
    k = kernel_of(p)
    assert k.supported and k.pattern == "module", k.reason
    src = k.source
    assert "def create_matmul_kernel_K0(" in src and "def create_broadcast_kernel_K1(" in src
    assert src.count("def _for_this_machine(") == 1  # the shared helper once
    assert "self.gemm = nn.Linear(in_features, out_features)" in src  # Model's own parameters
    assert "t_n0m = self._k0(x, self.gemm.weight)" in src and "t_n2 = self._k1(t_n0m, self.gemm.bias)" in src
    compile(src, "module.py", "exec")


def test_a_conv_kernel_uses_the_tasks_own_module(kb):
    p = Pipeline(kb, Design(task=str(EXTRA / "conv_pool_dropout.py")))
    planned = module_plan_of(p)
    assert planned is not None
    k = kernel_of(p)
    assert not k.supported and "dropout" in k.reason and "random" in k.reason


def test_a_level1_task_keeps_its_one_kernel(kb):
    p = Pipeline(kb, Design(task=str(EXTRA.parent / "tasks" / "softmax_rows.py")))
    assert module_plan_of(p) is None and kernel_of(p).pattern != "module"


@pytest.mark.sim
@pytest.mark.parametrize("task", tiered(["gemm_scale_leaky_relu.py", "linear_residual_clamp.py"],
                                        {"gemm_scale_leaky_relu.py"}))
def test_gemm_epilogue_modules_verify_against_torch(kb, tmp_path, task):
    import json
    import subprocess
    import sys

    for name in (task,):
        k = kernel_of(Pipeline(kb, Design(task=str(EXTRA / name))))
        assert k.supported, k.reason
        path = tmp_path / f"k_{name}"
        path.write_text(k.source)
        out = subprocess.run([sys.executable, "-m", "pypto_tui", "verify", str(EXTRA / name), "--kernel", str(path),
                              "--json", "--no-cache"], capture_output=True, text=True, check=False, timeout=1500)
        doc = json.loads(out.stdout)
        assert doc["passed"], (name, doc.get("reason"))
        broken = tmp_path / f"broken_{name}"
        broken.write_text(k.source.replace("self._k0(x, self", "self._k0(x * 1.001, self"))
        out = subprocess.run([sys.executable, "-m", "pypto_tui", "verify", str(EXTRA / name), "--kernel", str(broken),
                              "--json", "--no-cache"], capture_output=True, text=True, check=False, timeout=1500)
        assert not json.loads(out.stdout)["passed"], name


def test_logsumexp_is_its_composition_of_reductions_and_elementwise_kernels():
    from pypto_tui.contract.graph import OpNode, Value

    g = OpGraph((Value("x", "input", (4, 6), "fp32"),),
                (OpNode("n0", "logsumexp", "reduction", ("x",), {"dim": 1, "keepdim": False}, (4,), "fp32", "lse"),),
                "n0")
    d = decompose(g)
    assert [(n.op, n.shape) for n in d.nodes] == [("amax", (4, 1)), ("sub", (4, 6)), ("exp", (4, 6)), ("sum", (4,)),
                                                  ("log", (4,)), ("amax", (4,)), ("add", (4,))]
    assert d.nodes[-1].id == "n0" and d.nodes[-1].inputs == ("n0_log", "n0_max2")
    mp = partition(d, fusion_rules(None))
    # amax | sub, exp | sum | amax | log, add: the log, read only by the add, joins its kernel
    assert [[d.node(i).op for i in k.nodes] for k in mp.groups] == [["amax"], ["sub", "exp"], ["sum"], ["amax"],
                                                                    ["log", "add"]]


CHAIN = EXTRA.parent / "tasks_chain"


def test_a_transposed_input_is_the_matmuls_operand_layout_not_a_kernel():
    g = decompose(OpGraph.from_data(extract_contract(CHAIN / "bmm_scale_softmax.py").graph))
    mp = partition(g, fusion_rules(None))
    assert [[g.node(n).op for n in k.nodes] for k in mp.groups] == [["transpose", "bmm"], ["mul"], ["softmax"]]
    c, _reads, _ = contract_of(g, mp.groups[0], get_kb(), "t")
    # the input `k` is a parameter of the kernel under a name the matmul's own locals do not take
    assert c.signature is not None and c.signature.forward_source == "self, k_in, q"
    assert (c.family, c.op, c.supported) == ("matmul", "bmm", True)


def test_a_transpose_something_else_reads_stays_a_kernel_of_its_own():
    from pypto_tui.contract.graph import OpNode, Value

    g = OpGraph((Value("a", "input", (4, 6), "fp32"), Value("b", "input", (4, 6), "fp32")),
                (OpNode("t", "transpose", "layout", ("b",), {"dim0": 0, "dim1": 1}, (6, 4), "fp32", "b.t()"),
                 OpNode("mm", "matmul", "matmul", ("a", "t"), {}, (4, 4), "fp32", "a @ t"),
                 OpNode("e", "exp", "elementwise", ("t",), {}, (6, 4), "fp32", "exp(t)")), "mm")
    mp = partition(g, fusion_rules(None))
    assert mp.groups[0].nodes == ("t",)


def test_forward_reads_an_inputs_shape_as_a_constant():
    """rotary's `half = x.shape[-1] // 2` slices x at a number, not at data: the slices are the
    halves of the last axis, which the reader folds into rotate_half(x)."""
    c = extract_contract(CHAIN / "rotary.py")
    assert [n["op"] for n in c.graph["nodes"]] == ["mul", "rotate_half", "mul", "add"]
    assert not c.graph["problems"]


def test_a_chain_two_later_kernels_read_is_not_moved():
    """The merge of an elementwise chain into its only reader: with two readers it stays."""
    from pypto_tui.contract.graph import OpNode, Value

    g = OpGraph((Value("a", "input", (4, 6), "fp32"), Value("w", "input", (6, 6), "fp32")),
                (OpNode("e", "exp", "elementwise", ("a",), {}, (4, 6), "fp32", "exp(a)"),
                 OpNode("mm", "matmul", "matmul", ("e", "w"), {}, (4, 6), "fp32", "e @ w"),
                 OpNode("s", "sigmoid", "elementwise", ("a",), {}, (4, 6), "fp32", "sigmoid(a)"),
                 OpNode("o", "add", "elementwise", ("s", "e"), {}, (4, 6), "fp32", "s + e"),
                 OpNode("r", "add", "elementwise", ("o", "mm"), {}, (4, 6), "fp32", "o + mm")), "r")
    mp = partition(g, fusion_rules(None))
    assert [k.nodes for k in mp.groups] == [("e",), ("mm",), ("s", "o", "r")]


def test_a_view_of_a_kernels_output_is_a_free_reshape_in_forward_between_kernels(kb):
    """KernelBench level 2's `unsqueeze(x @ W.T + b, 1)` before a pool (tasks 28, 55, 98) matched no
    pattern as one kernel; forward views the output and the pool's kernel reads the view."""
    g = decompose(OpGraph.from_data(extract_contract(CHAIN / "linear_unsqueeze_maxpool.py").graph))
    mp = partition(g, fusion_rules(None))
    assert [g.node(v).op for v in mp.views] == ["view", "view"]
    assert all(v not in k.nodes for k in mp.groups for v in mp.views)
    src = kernel_of(Pipeline(kb, Design(task=str(CHAIN / "linear_unsqueeze_maxpool.py")))).source
    calls = [ln.strip() for ln in src.split("def forward(self, x):")[-1].splitlines() if ln.strip()]
    assert calls[:4] == ["t_n0m = self._k0(x, self.proj.weight)", "t_n0 = self._k1(t_n0m, self.proj.bias)",
                         "v_n1 = t_n0.unsqueeze(1)", "t_n2 = self._k2(v_n1)"]
    # the reshape back is written from the pooled tensor's own sizes, not the task's (32, 64): the module
    # runs at the smaller sizes verification tests it at
    assert calls[4] == "v_n3 = t_n2.reshape(t_n2.shape[0], t_n2.shape[1] * t_n2.shape[2])"


def test_a_reshape_in_forward_is_written_for_any_size_where_it_merges_axes():
    from pypto_tui.ops.views import Step, symbolic_sizes

    merge = symbolic_sizes((128, 1, 16384), [Step("reshape", shape=(128, 16384))])
    assert merge == [((0,), (1, 2))]
    assert symbolic_sizes((128, 64), [Step("unsqueeze", dim=1), Step("reshape", shape=(128, 1, 64))]) == [
        None, ((0,), 1, (1,))]
    assert symbolic_sizes((16,), [Step("reshape", shape=(1, 16, 1, 1, 1))]) == [(1, (0,), 1, 1, 1)]
    assert symbolic_sizes((2, 3, 4), [Step("reshape", shape=(2, 12)), Step("reshape", shape=(24,))]) == [
        ((0,), (1, 2)), ((0, 1, 2),)]
    # a reshape that splits one axis between kept ones: the kept axes from the source, the parts split
    # off literals but the last, which torch infers (-1)
    assert symbolic_sizes((32, 64, 131072), [Step("reshape", shape=(32, 64, 32, 64, 64))]) == [
        ((0,), (1,), 32, 64, -1)]


def test_global_average_pooling_is_the_mean_over_the_spatial_axes():
    from pypto_tui.contract.graph import OpNode, Value

    g = OpGraph((Value("x", "input", (2, 4, 6, 8), "fp32"),),
                (OpNode("p", "adaptive_avg_pool", "pool", ("x",), {"output_size": 1, "nd": 2}, (2, 4, 1, 1),
                        "fp32", "F.adaptive_avg_pool2d"),), "p")
    (mean,) = decompose(g).nodes
    assert (mean.op, mean.role, mean.attrs, mean.shape) == ("mean", "reduction", {"dim": (2, 3), "keepdim": True},
                                                            (2, 4, 1, 1))
    kept = OpGraph(g.values, (replace_attrs(g.nodes[0], {"output_size": (2, 2), "nd": 2}),), "p")
    assert decompose(kept).nodes[0].op == "adaptive_avg_pool"  # a pool to 2 x 2 is no mean


def replace_attrs(node, attrs):
    from dataclasses import replace

    return replace(node, attrs=attrs)


def test_batchnorm_on_rows_is_its_training_composition_and_each_kernel_writes_one_tensor():
    g = decompose(OpGraph.from_data(extract_contract(CHAIN / "linear_batchnorm1d.py").graph))
    ops = [n.op for n in g.nodes]
    assert ops[ops.index("mean"):] == ["mean", "sub", "pow", "mean", "add", "rsqrt", "mul", "mul", "add"]
    assert g.nodes[-1].id == "n1" and g.value("n1_eps").value == 1e-5
    mp = partition(g, fusion_rules(None))
    # (x - m) is read by the square and by the normalisation: the chain is cut after it
    assert [[g.node(n).op for n in k.nodes] for k in mp.groups][2:5] == [["mean"], ["sub"], ["pow"]]
    for k in mp.groups:
        inside = set(k.nodes)
        outside = [n for n in k.nodes if n == mp.output or any(n in m.inputs for m in g.nodes if m.id not in inside)]
        assert len(outside) <= 1 and (not outside or outside[0] == k.writes)
