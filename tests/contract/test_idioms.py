"""Forms written out by hand are rows of the kind they compute (ops/idiom.py): the reader matches every
entry's idioms with one matcher and names none of them itself."""

from __future__ import annotations

import dataclasses
import io
import tokenize
from pathlib import Path

import pytest
from support import contract

from pypto_tui.contract import recognise
from pypto_tui.contract.ir import Node
from pypto_tui.contract.model import Input
from pypto_tui.ops import idiom, registry
from pypto_tui.ops.idiom import Call, Const, Idiom, Tensor
from pypto_tui.ops.registry import REGISTRY


@pytest.mark.parametrize(("expr", "args", "op", "op_args"), [
    ("x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6)", "x", "rms_norm",
     {"dim": -1, "keepdim": True, "eps": 1e-6}),
    ("x / torch.sqrt(torch.mean(torch.square(x), dim=1, keepdim=True) + 1e-5)", "x", "rms_norm",
     {"dim": 1, "keepdim": True, "eps": 1e-5}),
    ("x / torch.sqrt(torch.sum(x ** 2))", "x", "frobenius_norm", {}),
    ("x / (torch.norm(x, p='fro') + 1e-3)", "x", "frobenius_norm", {"eps": 1e-3}),
    ("x / torch.sqrt(torch.sum(x ** 2, dim=1, keepdim=True))", "x", "l2_norm", {"dim": 1, "keepdim": True, "eps": 0.0}),
    ("x / (torch.norm(x, p=1, dim=1, keepdim=True) + 1e-6)", "x", "l1_norm", {"dim": 1, "keepdim": True, "eps": 1e-6}),
    ("x / torch.mean(torch.abs(x), dim=1, keepdim=True)", "x", "l1_norm",
     {"dim": 1, "keepdim": True, "eps": 0.0, "mean": True}),
    ("torch.sum((a - b) * (a - b))", "a, b", "mse_loss", {"reduction": "sum"}),
    ("torch.mean(torch.abs(a - b))", "a, b", "l1_loss", {"reduction": "mean"}),
    ("torch.mean(torch.relu(0.5 - a * b))", "a, b", "hinge_loss", {"reduction": "mean", "margin": 0.5}),
    ("torch.mean(1 - F.cosine_similarity(a, b, dim=1))", "a, b", "cosine_similarity",
     {"dim": 1, "eps": 1e-8, "form": "mean(1 - cos)", "reduction": "mean", "offset": 1}),
    ("torch.mul(torch.sigmoid(x), x)", "x", "swish", {}),
    ("x / (torch.abs(x) + 1)", "x", "softsign", {}),
])
def test_a_written_out_form_is_its_kind(expr, args, op, op_args):
    c = contract(expr, args)
    assert c.op == op, c.reason
    assert {k: v for k, v in c.op_args.items() if k != "operands"} == op_args
    assert c.op_args["operands"] == tuple(args.split(", "))
    assert c.family == ("loss" if op == "cosine_similarity" else registry.kind(op).role)


@pytest.mark.parametrize("expr", [
    "x / (torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True)) + 1e-5)",  # eps outside the root: another value
    "x / torch.norm(x, p=3, dim=1, keepdim=True)",  # no kind normalises by a 3-norm
])
def test_a_form_that_only_looks_like_a_norm_is_not_one(expr):
    assert contract(expr).family != "norm"


def test_a_hinge_with_a_ceiling_is_not_a_hinge():
    assert contract("torch.mean(torch.clamp(1 - a * b, min=0, max=2))", "a, b").op != "hinge_loss"


def test_an_idiom_is_one_row_of_its_entry():
    """A kind given a row is found by the matcher the reader uses, with no other change."""
    hardswish = registry.kind("hardswish")
    assert hardswish is not None and not hardswish.idioms
    x = Tensor("x")
    row = Idiom(Call(("div",), (Call(("mul",), (x, Call(("relu6",), (Call(("add",), (x, Const(equals=3))),)))),
                                Const(equals=6))))
    written = dataclasses.replace(hardswish, idioms=(row,))
    xin = Node("in", "x", value=0)
    tree = Node("bin", "div", (Node("bin", "mul", (xin, Node("call", "relu6", (Node("bin", "add", (
        xin, Node("const", value=3))),)))), Node("const", value=6)))
    ctx = recognise.Ctx({"x": Input(name="x", kind="tensor", shape=(4, 8), dtype="fp32")})
    found = idiom.find([written], tree, ctx)
    assert found is not None and (found.kind, found.family, found.op_args) == ("hardswish", "elementwise",
                                                                               {"operands": ("x",)})
    other = Node("bin", "div", (tree.args[0], Node("const", value=5)))
    assert idiom.find([written], other, ctx) is None


def test_the_reader_names_no_kind_it_reads_through_an_idiom():
    written = {k.name for k in REGISTRY.values() if k.idioms}
    assert {"rms_norm", "mse_loss", "hinge_loss", "swish", "softsign"} <= written
    path = Path(recognise.__file__)
    literals = {tok.string.strip("\"'") for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
                if tok.type == tokenize.STRING}
    assert not literals & written
