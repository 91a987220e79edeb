"""Where a kernel runs in the task's module tree (contract/submodule.py): derived from the graph both
front ends build (the traced one from stored traces, no torch), the pick a submodule path makes, the
filter the app's kernel picker applies, and the module tree the Contract step shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pypto_tui.contract.aten import graph_from_trace
from pypto_tui.contract.graph import OpGraph, OpNode
from pypto_tui.contract.submodule import (
    KNOWN_SHOWN,
    ModuleGroup,
    common_path,
    kernel_matches,
    module_tree,
    node_path,
    pick_submodule,
    submodule_of,
    within,
)
from pypto_tui.design import Design, Pipeline, module_plan_of, module_stages, task_kernels
from pypto_tui.errors import InputError
from pypto_tui.kb import get_kb
from pypto_tui.plan import decompose, fusion_rules, partition

FIX = Path(__file__).resolve().parents[1] / "fixtures"
TRACED = ("resnet_basic_block", "nested_bn_eval", "sequential_mlp", "modulelist_loop", "helper_function",
          "if_attribute")


def traced(name: str) -> OpGraph:
    return decompose(graph_from_trace(json.loads((FIX / "traces" / f"{name}.json").read_text())))


def kernel_subs(graph: OpGraph) -> list[str]:
    return [submodule_of(graph, g) for g in partition(graph, fusion_rules(None)).groups]


def node(spelling: str) -> OpNode:
    return OpNode("n0", "relu", "elementwise", ("x",), {}, (4,), "fp32", spelling)


@pytest.mark.parametrize(("spelling", "paths", "want"), [
    ("nn.Linear self.gemm", {}, "gemm"),                                     # the static reader's module call
    ("nn.Linear self.gemm bias", {}, "gemm"),                                # a decomposed part keeps it
    ("nn.Conv2d self.blocks_0_conv", {"blocks_0_conv": "blocks.0.conv"}, "blocks.0.conv"),  # traced attribute
    ("aten.relu.default in self.layer1.0", {}, "layer1.0"),                  # traced, inside a submodule
    ("aten.relu.default", {}, ""),                                           # traced, Model.forward
    ("torch.relu", {}, ""),                                                  # static, Model.forward
])
def test_a_node_tells_the_module_it_ran_in_from_its_spelling(spelling, paths, want):
    assert node_path(node(spelling), paths) == want


@pytest.mark.parametrize(("paths", "want"), [
    (["layer1.0.conv1", "layer1.0.bn1", "layer1.0.relu"], "layer1.0"),
    (["layer1.0.conv1"], "layer1.0.conv1"),
    (["layer1.0.conv1", ""], ""),
    (["layer1.10", "layer1.1"], "layer1"),  # whole parts, never a prefix of one
    ([], ""),
])
def test_the_common_path_is_the_deepest_module_holding_them_all(paths, want):
    assert common_path(paths) == want


def test_traced_kernels_know_the_innermost_module_running_all_their_operators():
    # nn.Sequential(Block(conv, bn), ReLU, Block(conv, bn)) then x + ... and relu in Model.forward
    assert kernel_subs(traced("nested_bn_eval")) == ["blocks.0.conv", "blocks", "blocks.2.conv", ""]
    # nn.Sequential(Linear, ReLU, Linear, ReLU, Linear): a linear's bias add and the next ReLU share `net`
    assert kernel_subs(traced("sequential_mlp")) == ["net.0", "net", "net.2", "net", "net.4", "net.4"]
    # a ModuleList looped over in Model.forward: the tanh and the residual add are forward's own
    assert kernel_subs(traced("modulelist_loop")) == ["blocks.0", "", "blocks.1", "", "blocks.2", ""]
    assert submodule_of(traced("sequential_mlp")) == "net"  # the whole graph (a task of one kernel)


@pytest.mark.parametrize("name", TRACED)
def test_a_kernels_submodule_holds_every_operator_and_no_deeper_one_does(name):
    g = traced(name)
    for group in partition(g, fusion_rules(None)).groups:
        sub = submodule_of(g, group)
        parts = [p.split(".") if p else [] for p in
                 (node_path(n, g.paths) for n in (g.node(i) for i in group.nodes) if n is not None)]
        head = sub.split(".") if sub else []
        assert parts and all(q[:len(head)] == head for q in parts), (sub, parts)  # it holds them all
        below = {tuple(q[len(head):len(head) + 1]) for q in parts}
        assert len(below) > 1 or below == {()}, (sub, parts)  # and no module inside it does


def test_the_static_readers_kernels_name_the_self_attribute_they_call():
    p = Pipeline(get_kb(), Design(task=str(FIX / "tasks_chain" / "swiglu.py")))
    found = task_kernels(p)
    assert [(k.ops, k.submodule) for k in found.kernels] == [("linear", "gate"), ("linear", "up"),
                                                            ("swish, mul", "")]
    graph, plan = module_plan_of(p) or (None, None)
    assert graph is not None and plan is not None  # each stage's is derived from its group, not stored apart
    assert [s.submodule for s in module_stages(p).stages] == [submodule_of(graph, g) for g in plan.groups]


@pytest.mark.parametrize(("path", "query", "inside"), [
    ("layer1.0.conv1", "layer1.0", True), ("layer1.0.conv1", "layer1", True), ("layer1.0", "layer1.0", True),
    ("layer1.0.conv1", "layer1.0.conv", False), ("layer1.10", "layer1.1", False), ("", "layer1", False),
    ("layer1", "", False),
])
def test_within_matches_whole_parts_of_the_path(path, query, inside):
    assert within(path, query) is inside


def test_a_path_holding_several_kernels_picks_the_first_and_says_which():
    subs = ["conv1", "", "layer1.0.conv1", "layer1.0", "layer1.1.conv1"]
    picked = pick_submodule(subs, "layer1")
    assert picked.position == 2 and "kernels 2, 3, 4" in picked.note and "kernel 2" in picked.note
    assert pick_submodule(subs, "self.layer1.0.conv1").position == 2 and not pick_submodule(subs, "conv1").note
    with pytest.raises(InputError, match=r"--submodule layer2: no kernel runs in that submodule; known: conv1, "
                                         r"layer1\.0\.conv1, layer1\.0, layer1\.1\.conv1$"):
        pick_submodule(subs, "layer2")
    with pytest.raises(InputError, match="Model.forward"):
        pick_submodule(["", ""], "layer1")
    with pytest.raises(InputError, match="give a submodule path"):
        pick_submodule(subs, " . ")


def test_an_unknown_path_lists_at_most_ten_submodules_then_dots():
    subs = [f"layer{i}" for i in range(KNOWN_SHOWN + 3)]
    with pytest.raises(InputError) as err:
        pick_submodule(subs, "head")
    message = str(err.value)
    assert message.endswith(f"layer{KNOWN_SHOWN - 1}, ...") and f"layer{KNOWN_SHOWN}," not in message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "ops", "sub", "kept"), [
    ("", "conv", "layer1.0", True), ("CONV", "conv, relu", "", True), ("layer1", "add", "layer1.0.bn1", True),
    ("forward", "add, relu", "", True), ("forward", "add", "layer1", False), ("bn", "conv", "layer1.0.conv1", False),
])
def test_the_pickers_filter_keeps_a_kernel_by_its_operators_or_submodule(text, ops, sub, kept):
    assert kernel_matches(text, ops, sub) is kept


def _flatten(group: ModuleGroup) -> list[int]:
    out: list[int] = []
    for entry in group.entries():
        out.extend([entry] if isinstance(entry, int) else _flatten(entry))
    return out


def test_the_module_tree_groups_kernels_and_folds_modules_that_only_pass_one_on():
    subs = ["conv1", "", "layer1.0.conv1", "layer1.0", "layer1.0.conv2", "layer1.0", "layer2.0", "fc"]
    root = module_tree(subs)
    assert root.kernels == [1] and [c.path for c in root.children] == ["conv1", "layer1.0", "layer2.0", "fc"]
    block = root.children[1]
    assert block.label == "layer1.0" and block.kernels == [3, 5] and block.count() == 4
    assert [c.label for c in block.children] == ["conv1", "conv2"]  # below their parent's path
    assert root.groups() == 6 and _flatten(root) == list(range(len(subs)))  # forward's order


@given(st.lists(st.lists(st.sampled_from(["a", "b", "0", "1"]), max_size=3).map(".".join), max_size=12))
def test_every_kernel_sits_once_in_the_tree_under_its_own_submodule(subs):
    root = module_tree(subs)
    assert sorted(_flatten(root)) == list(range(len(subs)))

    def check(group: ModuleGroup) -> None:
        for k in group.kernels:
            assert subs[k] == group.path
        for child in group.children:
            assert within(child.path, group.path) or not group.path
            check(child)

    check(root)
