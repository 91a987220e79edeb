"""Elementwise operators: one entry each (name, numpy reference, parameters, spellings, kernel form).

A new elementwise operator is one `_unary(...)` or `_binary(...)` entry here: its reference, the
parameters after the tensor (in torch's order, with torch's defaults), the module type when torch has
one (with its constructor's signature), the formula the contract shows, and its kernel form
(`render`), written with the operations pypto 0.2.0 has. Ops pypto lacks are composed from ones it
has: tanh is `2 * sigmoid(2x) - 1` (0.2.0 has no `pypto.tanh`), softplus is the overflow-safe
`max(x, 0) + log1p(exp(-|x|))`. An op without a render is still read, shaped and referenced; its
`unsupported` says why the kernel cannot compute it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import KernelOps, OpError, OpKind, Render, Shape, broadcast, same_shape
from pypto_tui.ops.idiom import Call, Const, Either, Idiom, Tensor

_erf = np.vectorize(math.erf, otypes=[np.float64])
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.exp(-np.logaddexp(0.0, -x))
    return out


def _softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    bx = beta * x
    out: np.ndarray = np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)
    return out


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        out: np.ndarray = 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    else:
        out = 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    return out


def _clamp(x: np.ndarray, lo: Any = None, hi: Any = None) -> np.ndarray:
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _identity(x: np.ndarray) -> np.ndarray:
    return x


# ------------------------------------------------------------------ the kernel's form (`OpKind.render`)
def _k_tanh(x: Any, ops: KernelOps) -> Any:
    return ops.call("sigmoid", x * 2.0) * 2.0 - 1.0


def _k_softplus(x: Any, ops: KernelOps, beta: Any = None) -> Any:
    """`max(bx, 0) + log1p(exp(-|bx|))`, over beta: no overflow for large x, and past torch's threshold
    (where torch returns x) the log1p term is already below float precision."""
    plain = beta is None or ops.literal(beta) == 1
    bx = x if plain else x * beta
    out = ops.call("maximum", bx, 0.0) + ops.call("log1p", ops.call("exp", ops.call("abs", bx) * (-1.0)))
    return out if plain else out / beta


def _k_clamp(x: Any, ops: KernelOps, lo: Any, hi: Any) -> Any:
    """None means no bound on that side (torch.clamp's convention)."""
    out = x
    if lo is not None:
        out = ops.call("maximum", out, lo)
    if hi is not None:
        out = ops.call("minimum", out, hi)
    return out


def _k_hardsigmoid(x: Any, ops: KernelOps) -> Any:
    return ops.call("minimum", ops.call("maximum", x + 3.0, 0.0), 6.0) * (1.0 / 6.0)


def _k_negative_part_exp(x: Any, ops: KernelOps) -> Any:
    """exp(min(x, 0)) - 1: ELU's negative side (pypto.expm1 takes rank 2..4 only, and pattern A is 1-D)."""
    return ops.call("exp", ops.call("minimum", x, 0.0)) - 1.0


def _k_log1p_exp_neg_abs(x: Any, ops: KernelOps) -> Any:
    return ops.call("log1p", ops.call("exp", ops.call("abs", x) * (-1.0)))


def _k_gelu_exact(x: Any, ops: KernelOps) -> Any:
    """Exact GELU inside an expression (GELU.exact-erf): erf by Abramowitz & Stegun 7.1.26 on
    |x| / sqrt(2), q = 1 - erf, then x - x q / 2 for x >= 0 and x q / 2 below; the same maths as
    the gelu_erf_terms template, written as one expression (t is recomputed where it recurs)."""
    z = ops.call("abs", x) * 0.7071067811865476
    t = ops.call("reciprocal", z * 0.3275911 + 1.0)
    poly = (((t * 1.061405429 + (-1.453152027)) * t + 1.421413741) * t + (-0.284496736)) * t + 0.254829592
    q = poly * t * ops.call("exp", z * z * (-1.0))
    return ops.call("where", ops.call("ge", x, 0.0), x - x * q * 0.5, x * q * 0.5)


def _k_call(fn: str) -> Render:
    """The kind is one pypto function of the same meaning."""
    return lambda x, p, ops: ops.call(fn, x)


def _k_same(x: Any, p: Mapping[str, Any], ops: KernelOps) -> Any:
    """A copy or a cast to the kernel's own dtype: the value itself."""
    return x


# ------------------------------------------------------------------ entries
# Written-out forms of a kind (ops/idiom.py): `x * sigmoid(x)` is a swish, `x / (1 + |x|)` a softsign.
_X = Tensor("x")
_ABS_X = Call(("abs",), (_X,))
_SIGMOID_X = Call(("sigmoid",), (_X,))


def _unary(name: str, ref: Callable[..., Any], params: tuple[str, ...] = (), modules: tuple[str, ...] = (),
           methods: bool = True, functions: tuple[str, ...] | None = None, identity: bool = False, *,
           render: Render | None = None, formula: str = "", defaults: Mapping[str, Any] | None = None,
           signature: tuple[tuple[str, Any], ...] = (), kernel_params: tuple[str, ...] = (),
           unsupported: str = "", dtype: str | None = None, idioms: tuple[Idiom, ...] = ()) -> OpKind:
    """A unary kind; `signature` is its module's constructor (torch's defaults), `kernel_params` the
    leading `params` its render reads."""
    return OpKind(name, "elementwise", same_shape, ref, functions=(name,) if functions is None else functions,
                  methods=(name,) if methods else (), modules=modules, params=params, identity=identity,
                  render=render, formula=formula, defaults=dict(defaults or {}), module_signature=signature,
                  kernel_params=kernel_params, unsupported=unsupported, dtype=dtype, idioms=idioms)


def _binary(name: str, ref: Callable[[Any, Any], Any], functions: tuple[str, ...] = (), *,
            render: Render | None = None, formula: str = "") -> OpKind:
    return OpKind(name, "elementwise", _broadcast, ref, functions=functions, methods=functions, arity=2,
                  render=render, formula=formula)


def _compare(op: str) -> Render:
    """pypto.<op>(a, b), a number written as a float: `mask == 0` with the integer 0 stops 0.2.0's compiler
    (F7A001 'Index out of bounds' on a causal mask), `== 0.0` verifies."""
    def render(a: Any, b: Any, p: Any, ops: KernelOps) -> Any:
        return ops.call(op, a, _float(b, ops))
    return render


def _float(x: Any, ops: KernelOps) -> Any:
    value = ops.literal(x)
    return float(value) if value is not None else x


def _broadcast(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast(shapes)


def _where_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast(shapes)


_INPLACE = (("inplace", False),)
"""The trailing `inplace` flag of most activations: bound so a positional call reads right, never computed."""

UNARY_KINDS: tuple[OpKind, ...] = (
    _unary("relu", lambda x: np.maximum(x, 0.0), ("inplace",), ("ReLU",), defaults=dict(_INPLACE),
           signature=_INPLACE, formula="max({x}, 0)", render=lambda x, p, ops: ops.call("maximum", x, 0.0)),
    _unary("relu6", lambda x: np.clip(x, 0.0, 6.0), ("inplace",), ("ReLU6",), defaults=dict(_INPLACE),
           signature=_INPLACE, formula="min(max({x}, 0), 6)",
           render=lambda x, p, ops: ops.call("minimum", ops.call("maximum", x, 0.0), 6.0)),
    _unary("leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x),
           ("negative_slope", "inplace"), ("LeakyReLU",), defaults={"negative_slope": 0.01, **dict(_INPLACE)},
           signature=(("negative_slope", 0.01), *_INPLACE), kernel_params=("negative_slope",),
           formula="{x} if {x} > 0 else {negative_slope} * {x}",
           render=lambda x, p, ops: ops.call("maximum", x, 0.0)
           + ops.call("minimum", x, 0.0) * p["negative_slope"]),
    _unary("sigmoid", _sigmoid, modules=("Sigmoid",), formula="1 / (1 + exp(-{x}))", render=_k_call("sigmoid")),
    _unary("tanh", np.tanh, modules=("Tanh",), formula="tanh({x})", render=lambda x, p, ops: _k_tanh(x, ops)),
    _unary("gelu", _gelu, ("approximate",), ("GELU",), defaults={"approximate": "none"},
           signature=(("approximate", "none"),),
           formula="{x} * Phi({x})  (Phi: the standard normal CDF; approximate={approximate})",
           render=lambda x, p, ops: _k_gelu_exact(x, ops)),
    _unary("elu", lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0))),
           ("alpha", "inplace"), ("ELU",), defaults={"alpha": 1.0, **dict(_INPLACE)},
           signature=(("alpha", 1.0), *_INPLACE), kernel_params=("alpha",),
           formula="{x} if {x} > 0 else {alpha} * (exp({x}) - 1)",
           render=lambda x, p, ops: ops.call("maximum", x, 0.0) + _k_negative_part_exp(x, ops) * p["alpha"]),
    _unary("celu", lambda x, alpha=1.0: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(
        np.minimum(x, 0.0) / alpha)), ("alpha", "inplace"), ("CELU",), defaults={"alpha": 1.0, **dict(_INPLACE)},
           signature=(("alpha", 1.0), *_INPLACE), kernel_params=("alpha",),
           formula="max(0, {x}) + min(0, {alpha} * (exp({x} / {alpha}) - 1))",
           render=lambda x, p, ops: ops.call("maximum", x, 0.0)
           + (ops.call("exp", ops.call("minimum", x, 0.0) / p["alpha"]) - 1.0) * p["alpha"]),
    _unary("selu", lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
           ("inplace",), ("SELU",), defaults=dict(_INPLACE), signature=_INPLACE,
           formula="1.0507010 * ({x} if {x} > 0 else 1.6732632 * (exp({x}) - 1))",
           render=lambda x, p, ops: (ops.call("maximum", x, 0.0) + _k_negative_part_exp(x, ops) * SELU_ALPHA)
           * SELU_SCALE),
    _unary("softplus", _softplus, ("beta", "threshold"), ("Softplus",), defaults={"beta": 1.0, "threshold": 20.0},
           signature=(("beta", 1.0), ("threshold", 20.0)), kernel_params=("beta",),
           formula="log(1 + exp({beta} * {x})) / {beta}  ({x} where {beta} * {x} > {threshold})",
           render=lambda x, p, ops: _k_softplus(x, ops, p.get("beta"))),
    _unary("softsign", lambda x: x / (1.0 + np.abs(x)), modules=("Softsign",), formula="{x} / (1 + |{x}|)",
           render=lambda x, p, ops: x / (ops.call("abs", x) + 1.0),
           idioms=(Idiom(Call(("div",), (_X, Either((Call(("add",), (Const(equals=1), _ABS_X)),
                                                     Call(("add",), (_ABS_X, Const(equals=1)))))))),)),
    _unary("hardtanh", lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val),
           ("min_val", "max_val", "inplace"), ("Hardtanh",),
           defaults={"min_val": -1.0, "max_val": 1.0, **dict(_INPLACE)},
           signature=(("min_val", -1.0), ("max_val", 1.0), *_INPLACE), kernel_params=("min_val", "max_val"),
           formula="clamp({x}, {min_val}, {max_val})",
           render=lambda x, p, ops: _k_clamp(x, ops, p["min_val"], p["max_val"])),
    _unary("hardsigmoid", lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0), ("inplace",), ("Hardsigmoid",),
           defaults=dict(_INPLACE), signature=_INPLACE, formula="clamp({x} / 6 + 0.5, 0, 1)",
           render=lambda x, p, ops: _k_hardsigmoid(x, ops)),
    _unary("hardswish", lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, ("inplace",), ("Hardswish",),
           defaults=dict(_INPLACE), signature=_INPLACE, formula="{x} * clamp({x} + 3, 0, 6) / 6",
           render=lambda x, p, ops: x * _k_hardsigmoid(x, ops)),
    _unary("swish", lambda x: x * _sigmoid(x), ("inplace",), ("SiLU",), functions=("swish", "silu"),
           defaults=dict(_INPLACE), signature=_INPLACE, formula="{x} * sigmoid({x})",
           render=lambda x, p, ops: x * ops.call("sigmoid", x),
           idioms=(Idiom(Either((Call(("mul",), (_X, _SIGMOID_X)), Call(("mul",), (_SIGMOID_X, _X))))),)),
    _unary("mish", lambda x: x * np.tanh(np.logaddexp(0.0, x)), ("inplace",), ("Mish",), defaults=dict(_INPLACE),
           signature=_INPLACE, formula="{x} * tanh(log(1 + exp({x})))",
           render=lambda x, p, ops: x * _k_tanh(_k_softplus(x, ops), ops)),
    _unary("logsigmoid", lambda x: -np.logaddexp(0.0, -x), modules=("LogSigmoid",),
           formula="log(1 / (1 + exp(-{x})))",
           render=lambda x, p, ops: ops.call("minimum", x, 0.0) - _k_log1p_exp_neg_abs(x, ops)),
    _unary("softshrink", lambda x, lambd=0.5: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0)),
           ("lambd",), ("Softshrink",), defaults={"lambd": 0.5}, signature=(("lambd", 0.5),),
           kernel_params=("lambd",),
           formula="{x} - {lambd} if {x} > {lambd} else {x} + {lambd} if {x} < -{lambd} else 0",
           render=lambda x, p, ops: x - _k_clamp(x, ops, -p["lambd"], p["lambd"])),
    _unary("hardshrink", lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0.0), ("lambd",), ("Hardshrink",),
           defaults={"lambd": 0.5}, signature=(("lambd", 0.5),), formula="{x} if |{x}| > {lambd} else 0",
           unsupported="needs a comparison mask (where(|x| > lambd, x, 0)); not scaffolded yet"),
    _unary("tanhshrink", lambda x: x - np.tanh(x), modules=("Tanhshrink",), signature=(),
           formula="{x} - tanh({x})", render=lambda x, p, ops: x - _k_tanh(x, ops)),
    _unary("exp", np.exp, render=_k_call("exp")), _unary("log", np.log, render=_k_call("log")),
    _unary("abs", np.abs, render=_k_call("abs")), _unary("neg", np.negative, render=lambda x, p, ops: -x),
    _unary("sqrt", np.sqrt, render=_k_call("sqrt")),
    _unary("rsqrt", lambda x: 1.0 / np.sqrt(x), render=_k_call("rsqrt")),
    _unary("square", np.square, render=lambda x, p, ops: x * x),
    _unary("reciprocal", lambda x: 1.0 / x, render=_k_call("reciprocal")),
    _unary("sin", np.sin, render=_k_call("sin")), _unary("cos", np.cos, render=_k_call("cos")),
    _unary("erf", _erf, unsupported="pypto 0.2.0 has no erf"),
    _unary("log1p", np.log1p, render=_k_call("log1p")),
    # pypto.expm1 only takes rank 2..4 and pattern A is 1-D: exp(x) - 1, as the documents' ELU does
    _unary("expm1", np.expm1, render=lambda x, p, ops: ops.call("exp", x) - 1.0),
    _unary("sign", np.sign, render=_k_call("sign")), _unary("floor", np.floor, render=_k_call("floor")),
    _unary("ceil", np.ceil, render=_k_call("ceil")),
    # pypto.round takes rank-2..4 tensors only (0.2.0) and pattern A is 1-D; a cast to int32 that rounds half
    # to even (CAST_RINT, torch.round's rule) and back to fp32 is exact at every pass (CAST.int-conversion)
    _unary("round", np.round, render=lambda x, p, ops: ops.cast(ops.cast(x, "int32", "CAST_RINT"), "fp32")),
    _unary("clamp", lambda x, min=None, max=None: _clamp(x, min, max), ("min", "max"), functions=("clamp", "clip"),
           defaults={"min": None, "max": None}, kernel_params=("min", "max"), formula="clamp({x}, {min}, {max})",
           render=lambda x, p, ops: _k_clamp(x, ops, p.get("min"), p.get("max"))),
    _unary("clamp_min", lambda x, min=None: _clamp(x, min, None), ("min",), kernel_params=("min",),
           render=lambda x, p, ops: _k_clamp(x, ops, p.get("min"), None)),
    _unary("clamp_max", lambda x, max=None: _clamp(x, None, max), ("max",), kernel_params=("max",),
           render=lambda x, p, ops: _k_clamp(x, ops, None, p.get("max"))),
    _unary("float", _identity, functions=(), identity=True, render=_k_same, dtype="fp32"),
    _unary("half", _identity, functions=(), dtype="fp16"),
    # x.char(), x.to(torch.int8): torch truncates toward zero, and so does CAST_TRUNC at every pass; the default
    # mode rounds, and saturation is not torch's wrap, so a task clamps first (CAST.int-conversion)
    _unary("char", lambda x: np.trunc(x).astype(np.int8), functions=(), dtype="int8",
           formula="int8({x}) (truncated toward zero)",
           render=lambda x, p, ops: ops.cast(x, "int8", "CAST_TRUNC")),
    _unary("contiguous", _identity, functions=(), identity=True, render=_k_same),
    _unary("clone", _identity, identity=True, render=_k_same),
    _unary("detach", _identity, identity=True, render=_k_same),
    _unary("dropout", lambda x, p=0.5, training=False, inplace=False: x, ("p", "training", "inplace"),
           ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d"),
           functions=("dropout", "dropout1d", "dropout2d", "dropout3d"), signature=(("p", 0.5), *_INPLACE),
           unsupported="dropout(p > 0) in training mode is random, so no kernel can match it; in eval mode it "
                       "is the identity"),
    _unary("identity", _identity, modules=("Identity",), methods=False, functions=(), identity=True),
)
def _rotate_half(x: np.ndarray) -> np.ndarray:
    h = x.shape[-1] // 2
    return np.concatenate((-x[..., h:], x[..., :h]), axis=-1)


def _rotate_half_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    s = tuple(shapes[0])
    if not s or s[-1] % 2:
        raise OpError(f"rotate_half needs an even last axis, got {s}")
    return s


# Rotary embeddings' rotate_half: the reader folds `cat((-x[..., h:], x[..., :h]), dim=-1)` (h half
# of x's last axis) into one call, so the chain x * cos + rotate_half(x) * sin is one elementwise
# kernel that keeps the last axis whole (contract/rope.py).
UNARY_KINDS += (OpKind("rotate_half", "elementwise", _rotate_half_shape, _rotate_half, functions=("rotate_half",),
                       row_local=True, note="[-x2, x1] over the halves of the last axis (rotary embeddings)"),)
BINARY_KINDS = (
    _binary("add", np.add, ("add",)), _binary("sub", np.subtract, ("sub", "subtract")),
    _binary("mul", np.multiply, ("mul", "multiply")), _binary("div", np.true_divide, ("div", "divide", "true_divide")),
    _binary("pow", np.power, ("pow",), render=lambda a, b, p, ops: a ** b),
    _binary("floordiv", np.floor_divide, ("floor_divide",)),
    _binary("mod", np.mod, ("remainder", "fmod")),
    # comparisons give a mask, rendered for a `where` to read (a mask as a kernel's output is not written)
    *(_binary(op, ref, (op,), render=_compare(op)) for op, ref in (
        ("lt", np.less), ("gt", np.greater), ("le", np.less_equal), ("ge", np.greater_equal), ("eq", np.equal),
        ("ne", np.not_equal))),
    _binary("maximum", np.maximum, ("maximum",), render=lambda a, b, p, ops: ops.call("maximum", a, b)),
    _binary("minimum", np.minimum, ("minimum",), render=lambda a, b, p, ops: ops.call("minimum", a, b)),
    # overflow-safe: max(a, b) + log1p(exp(-|a - b|)), never exp of a large operand
    _binary("logaddexp", np.logaddexp, ("logaddexp",), formula="log(exp({x}) + exp({y}))",
            render=lambda a, b, p, ops: ops.call("maximum", a, b)
            + ops.call("log1p", ops.call("exp", ops.call("abs", a - b) * (-1.0)))),
    OpKind("where", "elementwise", _where_shape, np.where, functions=("where",), arity=3,
           render=lambda cond, a, b, p, ops: ops.call("where", cond, _float(a, ops), _float(b, ops))),
)


def _ops(*names: str) -> tuple[str, ...]:
    """`aten.<name>` for each `<name>.<overload>`."""
    return tuple(f"aten.{n}" for n in names)


# The ATen operators each kind is traced as (torch.export, decomposed to core ATen).
ATEN: dict[str, tuple[str, ...]] = {
    "relu": _ops("relu.default"), "relu6": _ops("relu6.default"), "selu": _ops("selu.default"),
    "celu": _ops("celu.default"), "softshrink": _ops("softshrink.default"),
    "leaky_relu": _ops("leaky_relu.default"), "sigmoid": _ops("sigmoid.default"),
    "tanh": _ops("tanh.default"), "gelu": _ops("gelu.default"), "elu": _ops("elu.default"),
    "softplus": _ops("softplus.default"), "hardtanh": _ops("hardtanh.default"),
    "hardsigmoid": _ops("hardsigmoid.default"), "hardswish": _ops("hardswish.default"),
    "swish": _ops("silu.default"), "mish": _ops("mish.default"), "exp": _ops("exp.default"),
    "log": _ops("log.default"), "abs": _ops("abs.default"), "neg": _ops("neg.default"), "sqrt": _ops("sqrt.default"),
    "rsqrt": _ops("rsqrt.default"), "reciprocal": _ops("reciprocal.default"), "sin": _ops("sin.default"),
    "cos": _ops("cos.default"), "erf": _ops("erf.default"), "log1p": _ops("log1p.default"),
    "expm1": _ops("expm1.default"), "sign": _ops("sign.default"), "floor": _ops("floor.default"),
    "ceil": _ops("ceil.default"), "round": _ops("round.default"),
    "clamp": _ops("clamp.default", "clamp.Tensor"), "clamp_min": _ops("clamp_min.default"),
    "clamp_max": _ops("clamp_max.default"), "clone": _ops("clone.default", "alias.default", "lift_fresh_copy.default"),
    "detach": _ops("detach.default"), "dropout": _ops("dropout.default"), "float": _ops("_to_copy.default"),
    "add": _ops("add.Tensor", "add.Scalar"), "sub": _ops("sub.Tensor", "sub.Scalar", "rsub.Scalar", "rsub.Tensor"),
    "mul": _ops("mul.Tensor", "mul.Scalar"), "div": _ops("div.Tensor", "div.Scalar", "div.Tensor_mode"),
    "pow": _ops("pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar"),
    "mod": _ops("remainder.Tensor", "remainder.Scalar", "fmod.Tensor", "fmod.Scalar"),
    **{op: _ops(f"{op}.Tensor", f"{op}.Scalar") for op in ("lt", "gt", "le", "ge", "eq", "ne")},
    "maximum": _ops("maximum.default"), "minimum": _ops("minimum.default"), "where": _ops("where.self"),
    "logaddexp": _ops("logaddexp.default"),
}
KINDS = tuple(replace(k, aten=ATEN.get(k.name, ())) for k in UNARY_KINDS + BINARY_KINDS)

UNARY: dict[str, Callable[..., np.ndarray]] = {k.name: k.reference for k in UNARY_KINDS if k.reference}
BINARY: dict[str, Callable[[Any, Any], Any]] = {k.name: k.reference for k in BINARY_KINDS if k.reference}
