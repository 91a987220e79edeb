"""A kernel's contract reads its group of the graph back as calls the reader knows; how a kind is spelled
there is its registry entry's `spelled` (where, and how its parameters go), not a branch per operator."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from pypto_tui.contract import group, ir
from pypto_tui.contract.graph import OpNode
from pypto_tui.errors import Unsupported
from pypto_tui.ops import registry


def _spelled(op: str, attrs: dict[str, Any]) -> tuple[str, str, tuple[Any, ...], dict[str, Any]]:
    """(the call's name, where it is spelled, its arguments after the input, its keywords)."""
    node = OpNode("n1", op, "layout", ("v0",), attrs, None, "fp32", op)
    call = group._node(node, (ir.Node("in", "v0", value=0),))
    assert call.kind == "call" and call.args[0] == ir.Node("in", "v0", value=0)
    return call.name, call.value, tuple(a.value for a in call.args[1:]), {k: v.value for k, v in call.kwargs}


@pytest.mark.parametrize(("op", "attrs", "want"), [
    ("transpose", {"dim0": 0, "dim1": 2}, ("transpose", "method", (0, 2), {})),
    ("permute", {"dims": (2, 0, 1)}, ("permute", "method", (2, 0, 1), {})),
    ("narrow", {"dim": 1, "start": 4, "length": 8}, ("narrow", "torch", (), {"dim": 1, "start": 4, "length": 8})),
    ("pad", {"pad": (1, 2), "mode": "constant", "value": 0.5},
     ("pad", "F", (), {"pad": (1, 2), "mode": "constant", "value": 0.5})),
])
def test_a_layout_node_is_spelled_as_its_entry_says(op: str, attrs: dict[str, Any], want: tuple[Any, ...]) -> None:
    assert _spelled(op, attrs) == want


def test_a_kind_given_a_spelling_needs_no_branch(monkeypatch: pytest.MonkeyPatch) -> None:
    flip = registry.kind("flip")
    assert flip is not None and flip.spelled == ("", "")
    with pytest.raises(Unsupported, match="not scaffolded yet"):
        _spelled("flip", {"dims": (1,)})
    spelled = dataclasses.replace(flip, spelled=("torch", "keywords"))
    monkeypatch.setattr(registry, "kind", lambda name: spelled if name == "flip" else registry.REGISTRY.get(name))
    assert _spelled("flip", {"dims": (1,)}) == ("flip", "torch", (), {"dims": (1,)})
