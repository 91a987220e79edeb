"""A layout kind's contract (shape, formula, which operand is which, refusals) comes from its registry
entry alone: semantics names no layout operator, so a new layout kind is one entry."""

from __future__ import annotations

import dataclasses

import pytest

from pypto_tui.contract.model import Contract, Input
from pypto_tui.contract.semantics import derive
from pypto_tui.ops import registry
from pypto_tui.ops.registry import REGISTRY


def _contract(op: str, args: dict[str, object], *inputs: tuple[str, tuple[int, ...], str]) -> Contract:
    ins = tuple(Input(name=n, kind="tensor", shape=s, dtype=d) for n, s, d in inputs)
    operands = tuple(n for n, _, _ in inputs)
    return derive(Contract(task_path="t.py", supported=True, reason="", family="layout", op=op,
                           op_args={**args, "operands": operands}, inputs=ins))


def test_transpose_counts_negative_axes_from_zero_and_keeps_one_operand_symmetric():
    c = _contract("transpose", {"dim0": -2, "dim1": -1}, ("x", (4, 5, 6), "fp32"))
    assert c.output_shape == (4, 6, 5) and c.output_dtype == "fp32"
    assert c.formula == "out = x.transpose(1, 2)  (axes 1 and 2 swapped, (4, 6, 5))"
    assert c.asymmetric is False and c.direction is None and c.supported


def test_pad_shows_its_fill_as_the_type_of_its_default_and_refuses_a_symbolic_fill():
    c = _contract("pad", {"pad": (1, 2), "value": 0}, ("x", (3, 4), "fp32"))
    assert c.output_shape == (3, 7)
    assert c.formula == "out = F.pad(x, [1, 2], value=0.0)  (borders of 0.0 around x, (3, 7))"
    bad = _contract("pad", {"pad": (1, 2), "value": "v"}, ("x", (3, 4), "fp32"))
    assert bad.output_shape is None and "value='v' is not a constant number" in bad.unknown["op_args.value"]


def test_gather_and_embedding_take_their_dtype_from_the_values_and_refuse_float_positions():
    g = _contract("gather", {"dim": -1}, ("x", (3, 4), "fp16"), ("idx", (3, 2), "int64"))
    assert g.output_shape == (3, 2) and g.output_dtype == "fp16" and g.asymmetric is True
    assert g.direction == "x holds the values, idx their positions"
    f = _contract("gather", {"dim": 1}, ("x", (3, 4), "fp32"), ("idx", (3, 2), "fp32"))
    assert not f.supported and f.reason == "gather's index idx is fp32: torch takes int64 positions"
    e = _contract("embedding", {"max_norm": 1.0}, ("ids", (2, 5), "int64"), ("table", (10, 8), "fp32"))
    assert e.output_shape == (2, 5, 8) and e.output_dtype == "fp32"
    assert not e.supported and "max_norm" in e.reason


def test_cat_promotes_its_parts_and_says_their_order():
    c = _contract("cat", {"dim": -1}, ("a", (2, 3), "fp16"), ("b", (2, 5), "fp32"))
    assert c.output_shape == (2, 8) and c.output_dtype == "fp32"
    assert c.direction == "the parts land along axis 1 in the order a, b"


def test_a_new_layout_entry_is_read_with_no_other_change(monkeypatch: pytest.MonkeyPatch):
    flip = registry.kind("flip")
    assert flip is not None and not flip.formula
    assert "no contract of its own" in _contract("flip", {"dims": (0,)}, ("x", (3, 4), "fp32")).unknown["formula"]
    written = dataclasses.replace(flip, formula="out = {x} reversed along {dims}, {shape}")
    monkeypatch.setattr(registry, "kind", lambda name: written if name == "flip" else REGISTRY.get(name))
    c = _contract("flip", {"dims": (0,)}, ("x", (3, 4), "fp32"))
    assert c.formula == "out = x reversed along [0], (3, 4)" and c.output_shape == (3, 4)
