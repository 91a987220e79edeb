"""Elementwise operators: one entry each (name, numpy reference, parameters, spellings).

A new elementwise operator is one `_unary(...)` or `_binary(...)` line here: its reference, the
parameters after the tensor (in torch's order, with defaults), and the module type when torch has
one. The kernel side (pypto text) lives in `codegen/activations.py`; an op without it is still
read, shaped and referenced, and the contract says the scaffold cannot write it yet.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import OpError, OpKind, Shape, broadcast, same_shape

_erf = np.vectorize(math.erf, otypes=[np.float64])
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -x))


def _softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    bx = beta * x
    return np.where(bx > threshold, x, np.logaddexp(0.0, bx) / beta)


def _gelu(x: np.ndarray, approximate: str = "none") -> np.ndarray:
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _clamp(x: np.ndarray, lo: Any = None, hi: Any = None) -> np.ndarray:
    if lo is not None:
        x = np.maximum(x, lo)
    if hi is not None:
        x = np.minimum(x, hi)
    return x


def _identity(x: np.ndarray) -> np.ndarray:
    return x


def _unary(name: str, ref: Callable[..., Any], params: tuple[str, ...] = (), modules: tuple[str, ...] = (),
           methods: bool = True, functions: tuple[str, ...] | None = None, identity: bool = False) -> OpKind:
    return OpKind(name, "elementwise", same_shape, ref, functions=(name,) if functions is None else functions,
                  methods=(name,) if methods else (), modules=modules, params=params, identity=identity)


def _binary(name: str, ref: Callable[[Any, Any], Any], functions: tuple[str, ...] = ()) -> OpKind:
    return OpKind(name, "elementwise", _broadcast, ref, functions=functions, methods=functions, arity=2)


def _broadcast(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast(shapes)


def _where_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return broadcast(shapes)


UNARY_KINDS: tuple[OpKind, ...] = (
    _unary("relu", lambda x: np.maximum(x, 0.0), modules=("ReLU",)),
    _unary("relu6", lambda x: np.clip(x, 0.0, 6.0), modules=("ReLU6",)),
    _unary("leaky_relu", lambda x, negative_slope=0.01: np.where(x > 0, x, negative_slope * x), ("negative_slope",),
           ("LeakyReLU",)),
    _unary("sigmoid", _sigmoid, modules=("Sigmoid",)),
    _unary("tanh", np.tanh, modules=("Tanh",)),
    _unary("gelu", _gelu, ("approximate",), ("GELU",)),
    _unary("elu", lambda x, alpha=1.0: np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0.0))), ("alpha",),
           ("ELU",)),
    _unary("celu", lambda x, alpha=1.0: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(
        np.minimum(x, 0.0) / alpha)), ("alpha",), ("CELU",)),
    _unary("selu", lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(np.minimum(x, 0.0))),
           modules=("SELU",)),
    _unary("softplus", _softplus, ("beta", "threshold"), ("Softplus",)),
    _unary("softsign", lambda x: x / (1.0 + np.abs(x)), modules=("Softsign",)),
    _unary("hardtanh", lambda x, min_val=-1.0, max_val=1.0: np.clip(x, min_val, max_val), ("min_val", "max_val"),
           ("Hardtanh",)),
    _unary("hardsigmoid", lambda x: np.clip(x / 6.0 + 0.5, 0.0, 1.0), modules=("Hardsigmoid",)),
    _unary("hardswish", lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, modules=("Hardswish",)),
    _unary("swish", lambda x: x * _sigmoid(x), modules=("SiLU",), functions=("swish", "silu")),
    _unary("mish", lambda x: x * np.tanh(np.logaddexp(0.0, x)), modules=("Mish",)),
    _unary("logsigmoid", lambda x: -np.logaddexp(0.0, -x), modules=("LogSigmoid",)),
    _unary("softshrink", lambda x, lambd=0.5: np.where(x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0)),
           ("lambd",), ("Softshrink",)),
    _unary("hardshrink", lambda x, lambd=0.5: np.where(np.abs(x) > lambd, x, 0.0), ("lambd",), ("Hardshrink",)),
    _unary("tanhshrink", lambda x: x - np.tanh(x), modules=("Tanhshrink",)),
    _unary("exp", np.exp), _unary("log", np.log), _unary("abs", np.abs), _unary("neg", np.negative),
    _unary("sqrt", np.sqrt), _unary("rsqrt", lambda x: 1.0 / np.sqrt(x)), _unary("square", np.square),
    _unary("reciprocal", lambda x: 1.0 / x), _unary("sin", np.sin), _unary("cos", np.cos), _unary("erf", _erf),
    _unary("log1p", np.log1p), _unary("expm1", np.expm1), _unary("sign", np.sign), _unary("floor", np.floor),
    _unary("ceil", np.ceil), _unary("round", np.round),
    _unary("clamp", lambda x, min=None, max=None: _clamp(x, min, max), ("min", "max"),
           functions=("clamp", "clip")),
    _unary("clamp_min", lambda x, min=None: _clamp(x, min, None), ("min",)),
    _unary("clamp_max", lambda x, max=None: _clamp(x, None, max), ("max",)),
    _unary("float", _identity, functions=(), identity=True), _unary("half", _identity, functions=()),
    _unary("contiguous", _identity, functions=(), identity=True), _unary("clone", _identity, identity=True),
    _unary("detach", _identity, identity=True),
    _unary("dropout", lambda x, p=0.5, training=False, inplace=False: x, ("p", "training", "inplace"),
           ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d"),
           functions=("dropout", "dropout1d", "dropout2d", "dropout3d")),
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
    _binary("pow", np.power, ("pow",)), _binary("floordiv", np.floor_divide, ("floor_divide",)),
    _binary("mod", np.mod, ("remainder", "fmod")), _binary("lt", np.less, ("lt",)), _binary("gt", np.greater, ("gt",)),
    _binary("le", np.less_equal, ("le",)), _binary("ge", np.greater_equal, ("ge",)), _binary("eq", np.equal, ("eq",)),
    _binary("ne", np.not_equal, ("ne",)), _binary("maximum", np.maximum, ("maximum",)),
    _binary("minimum", np.minimum, ("minimum",)),
    OpKind("where", "elementwise", _where_shape, np.where, functions=("where",), arity=3),
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
}
KINDS = tuple(replace(k, aten=ATEN.get(k.name, ())) for k in UNARY_KINDS + BINARY_KINDS)

UNARY: dict[str, Callable[..., np.ndarray]] = {k.name: k.reference for k in UNARY_KINDS if k.reference}
BINARY: dict[str, Callable[[Any, Any], Any]] = {k.name: k.reference for k in BINARY_KINDS if k.reference}
