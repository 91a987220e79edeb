"""A vector norm and F.normalize inside a chain become the reductions pypto has (a sum of squares, a sum
or max of magnitudes) and elementwise parts, so the partition plans them like any other chain; the parts
compute what the whole did (numpy, each part by its registry kind's reference), and an expand around a
computed value moves to the operands, where the kernel patterns read broadcasts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pypto_tui.contract import ir
from pypto_tui.contract.graph import OpGraph, OpNode, Value
from pypto_tui.contract.group import _view
from pypto_tui.ops import registry
from pypto_tui.ops import views as V
from pypto_tui.plan import decompose

SHAPE = (3, 5, 4)


def graph(op: str, attrs: dict, shape: tuple[int, ...]) -> OpGraph:
    x = Value("x", "input", SHAPE, "fp32", None, "x")
    return OpGraph((x,), (OpNode("n0", op, "reduction" if op == "norm" else "norm", ("x",), attrs, shape, "fp32", op),),
                   "n0")


def run(g: OpGraph, x: np.ndarray) -> np.ndarray:
    """The graph's output by each node's registry reference (views: the expand steps a decomposition makes)."""
    env: dict[str, np.ndarray] = {"x": x, **{v.id: np.float32(v.value) for v in g.values if v.kind == "const"}}
    for n in g.nodes:
        args = [env[i] for i in n.inputs]
        if n.op == "view":
            out = args[0]
            for s in n.attrs["steps"]:
                assert V.step_of(s).kind == "expand"
                out = np.broadcast_to(out, V.step_of(s).shape)
            env[n.id] = out
            continue
        kind = registry.kind(n.op)
        assert kind is not None and kind.reference is not None, n.op
        env[n.id] = np.asarray(kind.reference(*args, **dict(n.attrs)))
        assert env[n.id].shape == n.shape, (n.op, env[n.id].shape, n.shape)
    return env[g.output]


@pytest.mark.parametrize(("p", "ops", "expect"), [
    (2, ["mul", "sum", "sqrt"], lambda x: np.sqrt(np.sum(x * x, axis=1, keepdims=True))),
    (1, ["abs", "sum"], lambda x: np.sum(np.abs(x), axis=1, keepdims=True)),
    (math.inf, ["abs", "amax"], lambda x: np.max(np.abs(x), axis=1, keepdims=True)),
])
def test_a_vector_norm_over_an_axis_is_a_reduction_pypto_has(p, ops, expect) -> None:
    d = decompose(graph("norm", {"p": p, "dim": (1,), "keepdim": True}, (3, 1, 4)))
    assert [n.op for n in d.nodes] == ops and d.nodes[-1].id == "n0"
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    np.testing.assert_allclose(run(d, x), expect(x), rtol=1e-6)


@pytest.mark.parametrize("attrs", [{"p": 3, "dim": (1,), "keepdim": True}, {"p": 2, "dim": None, "keepdim": False}])
def test_another_p_or_every_axis_stays_whole(attrs) -> None:
    d = decompose(graph("norm", attrs, (3, 1, 4) if attrs["dim"] else ()))
    assert [n.op for n in d.nodes] == ["norm"]


@pytest.mark.parametrize("p", [1.0, 2.0])
def test_normalize_is_its_norm_clamp_and_divide_and_computes_what_torch_does(p) -> None:
    attrs = {"p": p, "dim": 1, "eps": 1e-12}
    d = decompose(graph("normalize", attrs, SHAPE))
    # the expand to x's shape is left to broadcasting: the divide meets x itself
    assert [n.op for n in d.nodes] == (["mul", "sum", "sqrt"] if p == 2 else ["abs", "sum"]) + ["clamp", "div"]
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    x[:, :, 0] = 0.0  # a zero column: the clamp keeps the divide finite, as F.normalize's eps does
    normalize = registry.kind("normalize")
    assert normalize is not None and normalize.reference is not None
    got = run(d, x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, normalize.reference(x, **attrs), rtol=1e-6)


def test_an_expand_around_a_computed_value_moves_to_its_operands() -> None:
    norm = ir.Node("in", name="norm", value=0)
    computed = ir.Node("call", name="clamp", args=(ir.Node("call", name="sqrt", args=(norm,), value="torch"),),
                       kwargs=(("min", ir.const(1e-12)),), value="torch")
    widened = _view(V.Step("expand", shape=(3, 5, 4)), computed)
    assert widened.name == "clamp" and widened.kw()["min"].value == 1e-12
    (sqrt,) = widened.args
    (leaf,) = sqrt.args
    assert sqrt.name == "sqrt" and leaf.kind == "call" and leaf.name == "expand" and leaf.args[0] is norm
    # around anything but an elementwise computation the expand stays where it was
    product = ir.Node("bin", name="matmul", args=(norm, norm))
    assert _view(V.Step("expand", shape=(3, 5, 4)), product).name == "expand"
