"""An expand whose readers are elementwise and meet an operand of the expanded shape is left to
broadcasting (its target is a traced constant a kernel's smaller test shapes could not reach); an expand
forward returns, or one no operand of its shape meets, stays."""

from __future__ import annotations

from pypto_tui.contract.graph import OpGraph, OpNode, Value
from pypto_tui.ops import views as V
from pypto_tui.plan import decompose

FULL, ROW = (4, 6, 8), (4, 1, 8)


def _graph(reader_inputs: tuple[str, ...], output: str = "n2") -> OpGraph:
    values = (Value("x", "input", FULL, "fp32", None, "x"), Value("s", "input", ROW, "fp32", None, "s"))
    expand = OpNode("n1", "view", "view", ("s",), {"steps": (V.Step("expand", shape=FULL),)}, FULL, "fp32", "expand")
    div = OpNode("n2", "div", "elementwise", reader_inputs, {}, FULL, "fp32", "div")
    return OpGraph(values, (expand, div), output)


def test_an_expand_met_by_an_operand_of_its_shape_is_broadcast() -> None:
    d = decompose(_graph(("x", "n1")))
    assert [n.op for n in d.nodes] == ["div"] and d.nodes[0].inputs == ("x", "s")


def test_an_expand_with_no_full_operand_beside_it_or_returned_stays() -> None:
    alone = decompose(_graph(("n1", "n1")))
    assert [n.op for n in alone.nodes] == ["view", "div"]
    returned = decompose(_graph(("x", "n1"), output="n1"))
    assert [n.op for n in returned.nodes] == ["view", "div"]
