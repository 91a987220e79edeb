"""Attention written as GPT code writes it (tests/fixtures/tasks_traced/causal_heads.py, from its stored
trace): q, k, v split off one projection, heads made with view and transpose(1, 2), scores q @ k^T, the
future masked with a lower-triangular buffer. Each transpose of the heads is a copy kernel of its own; a
matmul reads only a swap of its operand's last two axes (what pattern B's transpose flags express); the
mask and the scaling are one elementwise kernel with `where`; and forward's reshapes into heads keep the
batch and token axes as sizes read from the tensor, the head size inferred."""

from __future__ import annotations

import json
from pathlib import Path

from pypto_tui.contract.aten import graph_from_trace
from pypto_tui.ops import views as V
from pypto_tui.plan import decompose, fusion_rules, partition

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def _plan():
    g = decompose(graph_from_trace(json.loads((FIX / "traces" / "causal_heads.json").read_text())))
    return g, partition(g, fusion_rules(None))


def test_a_matmul_takes_only_a_swap_of_the_last_two_axes_as_its_operand_layout() -> None:
    g, plan = _plan()
    assert not g.problems
    for grp in plan.groups:
        ops = [g.node(n) for n in grp.nodes]
        if any(n.role == "matmul" for n in ops):
            for t in (n for n in ops if n.op == "transpose"):
                rank = len(g.shape_of(t.inputs[0]))
                assert {t.attrs["dim0"] % rank, t.attrs["dim1"] % rank} == {rank - 2, rank - 1}
    heads = [grp for grp in plan.groups if [g.node(n).op for n in grp.nodes] == ["transpose"]]
    assert len(heads) == 4  # q, k, v into heads and the heads' output back


def test_the_mask_and_the_scale_are_one_elementwise_kernel_with_where() -> None:
    g, plan = _plan()
    masked = [[g.node(n).op for n in grp.nodes] for grp in plan.groups if any(g.node(n).op == "where"
                                                                            for n in grp.nodes)]
    assert masked == [["mul", "eq", "where"]]


def test_a_reshape_that_splits_one_axis_reads_the_others_and_infers_the_last_part() -> None:
    split = V.Step("reshape", shape=(2, 64, 4, 32))
    assert V.symbolic_sizes((2, 64, 128), [split]) == [((0,), (1,), 4, -1)]
    assert V.symbolic_sizes((8, 64, 8, 8), [V.Step("reshape", shape=(8, 4, 16, 8, 8))]) == [
        ((0,), 4, -1, (2,), (3,))]
    assert V.symbolic_sizes((2, 64, 4, 32), [V.Step("reshape", shape=(2, 64, 128))]) == [((0,), (1,), (2, 3))]
    assert V.symbolic_sizes((4, 6), [V.Step("reshape", shape=(2, 12))]) == [(2, 12)]  # no axis kept: literals


def test_attention_is_one_kernel_of_a_chain() -> None:
    """F.scaled_dot_product_attention over three projections: the attention anchor is a kernel of the
    chain as it is of a one-operator task (its own pattern), the projections kernels before it."""
    from pypto_tui.design import Design, Pipeline, task_kernels
    from pypto_tui.kb import get_kb

    found = task_kernels(Pipeline(get_kb(), Design(task=str(FIX / "tasks_chain" / "sdpa_chain.py"))))
    assert found.supported and found.chain, found.reason
    assert [k.ops for k in found.kernels] == ["linear", "linear", "linear", "scaled_dot_product_attention"]
    attention = found.kernels[-1].pipeline
    assert (attention.contract().family, attention.contract().op_args.get("is_causal")) == ("attention", False)


def test_patches_by_unfold_are_a_reshape_and_neighbouring_swaps() -> None:
    """img.unfold(2, p, p).unfold(3, p, p): each unfold whose windows tile the axis is a free reshape of
    the axis into (D / p, p), then the p axis moved last by transpose kernels; the windows match torch's."""
    import numpy as np

    from pypto_tui.contract.graph import OpGraph, OpNode, Value
    from pypto_tui.design import Design, Pipeline, task_kernels
    from pypto_tui.kb import get_kb
    from pypto_tui.ops import registry

    g = decompose(OpGraph((Value("x", "input", (2, 3, 8, 4), "fp32", None),),
                          (OpNode("n0", "unfold", "layout", ("x",), {"dimension": 2, "size": 2, "step": 2},
                                  (2, 3, 4, 4, 2), "fp32", "unfold"),), "n0"))
    assert [(n.op, n.shape) for n in g.nodes] == [("view", (2, 3, 4, 2, 4)), ("transpose", (2, 3, 4, 4, 2))]
    x = np.arange(2 * 3 * 8 * 4, dtype=float).reshape(2, 3, 8, 4)
    windows = registry.kind("unfold").reference(x, dimension=2, size=2, step=2)
    assert np.array_equal(windows, np.swapaxes(x.reshape(2, 3, 4, 2, 4), 3, 4))
    assert np.array_equal(windows[0, 0, 1, :, 1], x[0, 0, 3, :])  # window 1's second row: row 2 * 1 + 1
    overlapping = decompose(OpGraph(g.values, (OpNode("n0", "unfold", "layout", ("x",),
                                                      {"dimension": 2, "size": 3, "step": 1}, (2, 3, 6, 4, 3),
                                                      "fp32", "unfold"),), "n0"))
    assert [n.op for n in overlapping.nodes] == ["unfold"]  # overlapping windows: no such decomposition
    found = task_kernels(Pipeline(get_kb(), Design(task=str(FIX / "tasks_chain" / "patch_embed.py"))))
    assert found.supported and [k.ops for k in found.kernels] == ["transpose", "transpose", "linear", "add"]
