"""Parts of an axis a kernel reads (`split`, `chunk`, `unbind`, `x[:, i]`, `narrow`): both front ends
read them as views, and the graph turns each narrow or select into a `narrow` copy kernel (SLICE.rows-copy)
with the free views around it left to forward."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto_tui.contract.graph import OpGraph, OpNode, Value
from pypto_tui.design import Design, Pipeline, task_kernels
from pypto_tui.kb import get_kb
from pypto_tui.ops import registry
from pypto_tui.ops import views as V
from pypto_tui.ops.base import OpError
from pypto_tui.plan import decompose

CHAIN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain"


@pytest.mark.parametrize(("name", "args", "kwargs", "parts"), [
    ("chunk", [3], {"dim": 1}, [(0, 4), (4, 4), (8, 2)]),  # torch's chunk: ceil(10 / 3) = 4 a part
    ("chunk", [4], {"dim": -1}, [(0, 3), (3, 3), (6, 3), (9, 1)]),
    ("split", [6, 1], {}, [(0, 6), (6, 4)]),
    ("split", [[2, 3, 5]], {"dim": 1}, [(0, 2), (2, 3), (5, 5)]),
])
def test_a_split_is_one_narrow_per_part_as_torch_cuts_it(name, args, kwargs, parts) -> None:
    steps = V.read_split(name, (2, 10), args, kwargs)
    assert [(s.kind, s.dim, s.start, s.length) for s in steps] == [("narrow", 1, a, n) for a, n in parts]
    x = np.arange(20).reshape(2, 10)
    assert np.array_equal(np.concatenate([V.apply(s, x) for s in steps], axis=1), x)  # the parts tile the axis


def test_unbind_selects_and_bad_sizes_say_why() -> None:
    assert [(s.kind, s.index) for s in V.read_split("unbind", (3, 5), [], {"dim": 0})] == [("select", i)
                                                                                          for i in range(3)]
    with pytest.raises(OpError, match="do not add up"):
        V.read_split("split", (2, 10), [[2, 3]], {"dim": 1})
    with pytest.raises(OpError, match="positive number"):
        V.read_split("chunk", (2, 10), [0], {"dim": 1})


def _graph(steps: tuple[V.Step, ...]) -> OpGraph:
    x = Value("x", "input", (4, 6, 8), "fp32", None)
    shape = (4, 6, 8)
    for s in steps:
        shape = V.out_shape(s, shape)
    view = OpNode("n0", "view", "view", ("x",), {"steps": steps}, shape, "fp32", "x[...]")
    relu = OpNode("n1", "relu", "elementwise", ("n0",), {}, shape, "fp32", "relu")
    return OpGraph((x,), (view, relu), "n1")


def test_a_select_between_free_views_becomes_one_copy_and_the_views_keep_their_ids() -> None:
    steps = (V.Step("unsqueeze", dim=0), V.Step("select", dim=2, index=3), V.Step("reshape", shape=(4, 8)))
    g = decompose(_graph(steps))
    made = [(n.id, n.op, n.inputs, n.shape) for n in g.nodes]
    assert made == [("n0v0", "view", ("x",), (1, 4, 6, 8)), ("n0s1", "narrow", ("n0v0",), (1, 4, 1, 8)),
                    ("n0", "view", ("n0s1",), (4, 8)), ("n1", "relu", ("n0",), (4, 8))]
    copy = g.node("n0s1")
    assert copy is not None and dict(copy.attrs) == {"dim": 2, "start": 3, "length": 1} and copy.role == "layout"
    # the parts compute what the view did
    x = np.random.default_rng(0).standard_normal((4, 6, 8))
    want = x[None][:, :, 3].reshape(4, 8)
    got = x[None]
    got = registry.kind("narrow").reference(got, dim=2, start=3, length=1).reshape(4, 8)
    assert np.array_equal(got, want)


def test_free_views_and_expands_stay_whole() -> None:
    for steps in [(V.Step("unsqueeze", dim=0),), (V.Step("narrow", dim=1, start=0, length=2),
                                                   V.Step("expand", shape=(4, 2, 8)))]:
        g = decompose(_graph(steps))
        assert [n.op for n in g.nodes] == ["view", "relu"]


@pytest.mark.parametrize("name", ["glu_split.py", "cls_head.py"])
def test_a_task_plans_a_copy_kernel_per_part(name) -> None:
    found = task_kernels(Pipeline(get_kb(), Design(task=str(CHAIN / name))))
    assert found.supported, found.reason
    copies = [k.pipeline for k in found.kernels if k.pipeline.contract().op == "narrow"]
    assert len(copies) == (2 if name == "glu_split.py" else 1)
    for p in copies:
        assert p.contract().family == "layout" and p.dims().reshape == "slice_rows"


def test_a_widened_parameter_a_cat_reads_is_made_whole_by_an_elementwise_kernel() -> None:
    """cls.expand(b, -1, -1) before torch.cat: the cat reads a contiguous tensor, which forward may not
    make, so a clone after the expand is an elementwise kernel whose leaf is the widening view."""
    found = task_kernels(Pipeline(get_kb(), Design(task=str(CHAIN / "cls_token.py"))))
    assert found.supported, found.reason
    assert [k.ops for k in found.kernels] == ["view, clone", "linear", "add", "cat"]
    made = found.kernels[0].pipeline
    assert made.contract().family == "elementwise" and made.contract().output_shape == (4, 1, 64)


def test_a_widening_view_an_elementwise_kernel_reads_stays_its_leaf() -> None:
    x = Value("x", "input", (4, 1, 8), "fp32", None)
    y = Value("y", "input", (4, 6, 8), "fp32", None)
    wide = OpNode("n0", "view", "view", ("x",), {"steps": (V.Step("expand", shape=(4, 6, 8)),)}, (4, 6, 8), "fp32",
                  "expand")
    add = OpNode("n1", "add", "elementwise", ("n0", "y"), {}, (4, 6, 8), "fp32", "+")
    g = decompose(OpGraph((x, y), (wide, add), "n1"))
    # no clone: the add widens it itself, by broadcasting (y has the widened shape), so the view goes too
    assert [(n.op, n.inputs) for n in g.nodes] == [("add", ("x", "y"))]
