"""The role table (ops/roles.py): what each family means to the steps that plan it is data, so
every family the contract can name has a row and the steps' decisions follow the row."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui import dims
from pypto_tui.ops import REGISTRY
from pypto_tui.ops.roles import NO_TRAITS, ROLE_TRAITS, traits
from pypto_tui.vocabulary import FAMILIES

PACKAGE = Path(dims.__file__).resolve().parent
STEPS = ["dims.py", "plan.py", "roofline.py", "contract/checks.py", "contract/conv.py", "contract/selfcheck.py",
         "sim/verification.py", "codegen/pattern.py"]


def test_every_family_but_unknown_has_a_row_and_every_anchor_role_is_a_family() -> None:
    assert set(ROLE_TRAITS) == set(FAMILIES) - {"unknown"}
    assert traits("unknown") is NO_TRAITS and traits(None) is NO_TRAITS
    anchor_roles = {k.role for k in REGISTRY.values() if k.is_anchor} - {"layout", "argreduce", "other"}
    assert anchor_roles <= set(ROLE_TRAITS), anchor_roles - set(ROLE_TRAITS)


@pytest.mark.parametrize("path", STEPS)
def test_the_planning_steps_name_no_family_in_a_branch(path: str) -> None:
    """Only 'unknown' (a contract nobody recognised) may be compared with a family literal."""
    tree = ast.parse((PACKAGE / path).read_text(encoding="utf-8"))
    named = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if not any(isinstance(s, ast.Attribute) and s.attr == "family" for s in sides):
            continue
        literals = [e.value for s in sides for e in ([s] if isinstance(s, ast.Constant) else getattr(s, "elts", []))
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        named += [(node.lineno, v) for v in literals if v not in ("unknown", "")]
    assert not named, f"{path} branches on family names: {named}"


def test_a_role_row_drives_the_dimension_step(kb) -> None:
    """The same contract planned with the scan row swapped for the elementwise row loses the scan's
    own output shape: the decision reads the row, not the family name."""
    from pypto_tui.contract.model import Contract

    c = Contract.from_dict({"family": "scan", "op": "cumsum", "supported": True,
                            "inputs": [{"name": "x", "kind": "tensor", "shape": [4, 8, 16], "dtype": "fp32"}],
                            "output_shape": [4, 8, 16], "reduction": None, "op_args": {"dim": 1}})
    kernel = (32, 16)
    assert dims._output_kernel(c, kernel, [[0, 1], [2]], ["keep", "keep"]) == (4, 8, 16)
    saved = ROLE_TRAITS["scan"]
    try:
        ROLE_TRAITS["scan"] = replace(saved, output_keeps_rank=False)
        assert dims._output_kernel(c, (512,), [[0, 1, 2]], ["keep"]) == (512,)
    finally:
        ROLE_TRAITS["scan"] = saved
