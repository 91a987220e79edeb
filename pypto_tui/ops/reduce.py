"""Reductions over axes: sum, mean, amax/amin, max/min over a dim, prod, logsumexp, var, std,
argmax/argmin, topk. The shape function reads `dim` and `keepdim` (dim None: every axis); topk's keeps
the axis with its `k` values."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pypto_tui.ops.base import Decomposer, Decomposition, OpError, OpKind, Shape, ShapeOf, axis, part


def axes_of(attrs: Mapping[str, Any], rank: int) -> tuple[int, ...]:
    dim = attrs.get("dim")
    if dim is None:
        return tuple(range(rank))
    dims = dim if isinstance(dim, tuple | list) else (dim,)
    return tuple(sorted({axis(d, rank) for d in dims}))


def reduced_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    axes = axes_of(attrs, len(x))
    if attrs.get("keepdim"):
        return tuple(1 if i in axes else s for i, s in enumerate(x))
    return tuple(s for i, s in enumerate(x) if i not in axes)


def _lse(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> np.ndarray:
    m = np.max(x, axis=axis, keepdims=True)
    out = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    return np.asarray(out if keepdims else np.squeeze(out, axis=axis))


def _ref(fn: Callable[..., Any], extra: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
         ) -> Callable[..., np.ndarray]:
    def run(x: np.ndarray, **attrs: Any) -> np.ndarray:
        axes = axes_of(attrs, x.ndim)
        kw = extra(attrs) if extra else {}
        return np.asarray(fn(x, axis=axes, keepdims=bool(attrs.get("keepdim")), **kw))
    return run


def _mean(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    """The sum over the axes divided by the count the arrays give (what np.mean computes, written so
    the count is plainly the arrays' own: a reference must hold at any size)."""
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims) / max(1, math.prod(x.shape[a] for a in axis)))


def _correction(attrs: Mapping[str, Any]) -> dict[str, Any]:
    c = attrs.get("correction")
    if c is None:
        c = 1 if attrs.get("unbiased", True) else 0
    return {"ddof": c}


def _arg(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    def run(x: np.ndarray, **attrs: Any) -> np.ndarray:
        dim = attrs.get("dim")
        if isinstance(dim, tuple | list) and len(dim) == 1:  # the contract's axes: one axis
            dim = dim[0]
        if dim is None:
            return np.asarray(fn(x.reshape(-1)))
        a = axis(dim, x.ndim)
        out = fn(x, axis=a)
        return np.expand_dims(out, a) if attrs.get("keepdim") else out
    return run


def _kind(name: str, fn: Callable[..., np.ndarray], functions: tuple[str, ...] | None = None,
          params: tuple[str, ...] = ("dim", "keepdim"), role: str = "reduction",
          decompose: Decomposer | None = None, aten: tuple[str, ...] = (), spelled_as: str | None = None,
          scaling: str = "none", unsupported: str = "", formula: str | None = None,
          defaults: Mapping[str, Any] | None = None) -> OpKind:
    """A reduction over `dim`; its formula (default: the name over the reduced axes) has the
    placeholders {x} (the reduced operand), {dim} (the reduced axes' letters), {count} (how many values
    each output reduces) and {correction} (var and std's divisor correction)."""
    spell = functions if functions is not None else (name,)
    return OpKind(name, role, reduced_shape, fn, functions=spell, methods=spell, params=params, pattern=role,
                  decompose=decompose, aten=tuple(f"aten.{a}" for a in aten), spelled_as=spelled_as,
                  scaling=scaling, unsupported=unsupported,
                  formula=formula if formula is not None else name + "_{{{dim}}} {x}", defaults=dict(defaults or {}))


_ALL = {"dim": None, "keepdim": False}
"""torch's defaults of a reduction whose dim may be left out (every axis)."""
_SUM = ("dim", "keepdim", "dtype")


_MAX, _MIN = "max_{{{dim}}} {x}", "min_{{{dim}}} {x}"
_STAT = "_{{{dim}}} {x}  (divisor {count} - {correction})"


_UNVERIFIED = "no verified PyPTO reduction (pypto 0.2.0 has sum, amax, amin, prod)"
"""Why the reduction pattern does not take a kind the contract reads: the compiler's reductions are
those four (a mean is a sum and a scale)."""


def _logsumexp_parts(n: Any, shape_of: ShapeOf) -> Decomposition:
    """logsumexp as its composition: m = amax(x, keepdim), log(sum(exp(x - m))) + m (the max taken
    again without keepdim when the result drops the axes). The last node keeps the id."""
    x = n.inputs[0]
    xs = shape_of(x)
    dim = n.attrs.get("dim")
    keep = bool(n.attrs.get("keepdim"))
    kept = reduced_shape([xs], {"dim": dim, "keepdim": True}) if xs is not None else None
    nid = n.id
    parts = [part(n, "_max", "amax", "reduction", (x,), {"dim": dim, "keepdim": True}, kept),
             part(n, "_sub", "sub", "elementwise", (x, f"{nid}_max"), {}, xs),
             part(n, "_exp", "exp", "elementwise", (f"{nid}_sub",), {}, xs),
             part(n, "_sum", "sum", "reduction", (f"{nid}_exp",), {"dim": dim, "keepdim": keep}, n.shape),
             part(n, "_log", "log", "elementwise", (f"{nid}_sum",), {}, n.shape)]
    m_out = f"{nid}_max"
    if not keep:
        parts.append(part(n, "_max2", "amax", "reduction", (x,), {"dim": dim, "keepdim": False}, n.shape))
        m_out = f"{nid}_max2"
    parts.append(part(n, "", "add", "elementwise", (f"{nid}_log", m_out), {}, n.shape))
    return Decomposition(tuple(parts))


def _norm_parts(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """A vector norm over named axes as the reductions pypto 0.2.0 has: p=2 as sqrt(sum(x * x)), p=1 as
    sum(|x|), p=inf as amax(|x|). F.normalize traces to this node (then a clamp and a divide), so a model's
    normalisation is planned like any other reduction chain. Another p, or every axis at once, stays whole
    (refused with the node's name). The last part keeps the id."""
    p, dim = n.attrs.get("p", 2), n.attrs.get("dim")
    if dim is None or dim == () or p not in (1, 2, math.inf, 1.0, 2.0):
        return None
    x, xs, nid = n.inputs[0], shape_of(n.inputs[0]), n.id
    reduce = {"dim": dim, "keepdim": bool(n.attrs.get("keepdim"))}
    if p == 2:
        return Decomposition((part(n, "_sq", "mul", "elementwise", (x, x), {}, xs),
                              part(n, "_sum", "sum", "reduction", (f"{nid}_sq",), reduce, n.shape),
                              part(n, "", "sqrt", "elementwise", (f"{nid}_sum",), {}, n.shape)))
    return Decomposition((part(n, "_abs", "abs", "elementwise", (x,), {}, xs),
                          part(n, "", "sum" if p == 1 else "amax", "reduction", (f"{nid}_abs",), reduce, n.shape)))


def topk_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    """torch.topk's values: the input's shape with `k` along `dim` (torch refuses a k past the axis)."""
    x = tuple(shapes[0])
    a = axis(attrs.get("dim", -1), len(x))
    k = attrs.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= (x[a] if x else 1):
        raise OpError(f"topk's k={k!r} is not a count of values along an axis of size {x[a] if x else 1}")
    return (*x[:a], k, *x[a + 1:])


def _topk(x: np.ndarray, **attrs: Any) -> np.ndarray:
    """The k largest (largest=False: smallest) values along `dim`, in that order: what torch.topk's
    values hold with sorted=True (with sorted=False torch leaves the order unspecified)."""
    a = axis(attrs.get("dim", -1), x.ndim)
    ordered = np.sort(x, axis=a)
    if attrs.get("largest", True):
        ordered = np.flip(ordered, axis=a)
    return np.asarray(np.take(ordered, np.arange(int(attrs["k"])), axis=a))


TOPK = OpKind("topk", "reduction", topk_shape, _topk, functions=("topk",), methods=("topk",),
              params=("k", "dim", "largest", "sorted"), pattern="topk", aten=("aten.topk.default",),
              formula="top {k} of {x} along {dim} (largest={largest}, sorted)", returns=("values", "indices"),
              defaults={"dim": -1, "largest": True, "sorted": True})
"""torch.topk's values (`[0]`, `.values`): the kind computes the first of the (values, indices) it
returns; its own pattern writes it (pypto.topk, TOPK.values)."""


def _topk_indices(x: np.ndarray, **attrs: Any) -> np.ndarray:
    """The positions along `dim` of the values `_topk` gives, in its order (a stable sort: ties keep the
    lower position first, as pypto.topk and torch's CPU kernel do on distinct values)."""
    a = axis(attrs.get("dim", -1), x.ndim)
    largest = attrs.get("largest", True)
    order = np.argsort(-x if largest else x, axis=a, kind="stable")
    return np.asarray(np.take(order, np.arange(int(attrs["k"])), axis=a)).astype(np.int64)


TOPK_INDICES = OpKind("topk_indices", "reduction", topk_shape, _topk_indices, params=TOPK.params, pattern="topk",
                      formula="positions of the top {k} of {x} along {dim} (largest={largest}, sorted)",
                      defaults=TOPK.defaults, dtype="int64")
"""torch.topk's indices (`[1]`, `.indices`): the second element of TOPK's tuple (`<kind>_<element>`), the
same pypto.topk call writing its int32 indices as torch's int64."""


KINDS = (
    _kind("sum", _ref(np.sum), params=_SUM, aten=("sum.dim_IntList", "sum.default"), scaling="sum", defaults=_ALL),
    _kind("mean", _ref(_mean), params=_SUM, aten=("mean.dim", "mean.default"), scaling="mean",
          formula="sum_{{{dim}}} {x} / {count}", defaults=_ALL),
    _kind("amax", _ref(np.max), aten=("amax.default",), formula=_MAX, defaults={"dim": (), "keepdim": False}),
    _kind("amin", _ref(np.min), aten=("amin.default",), formula=_MIN, defaults={"dim": (), "keepdim": False}),
    _kind("prod", _ref(np.prod), params=_SUM, aten=("prod.dim_int", "prod.default"), defaults=_ALL),
    _kind("logsumexp", _ref(_lse), decompose=_logsumexp_parts, aten=("logsumexp.default",),
          unsupported=_UNVERIFIED, formula="log sum_{{{dim}}} exp({x})", defaults={"keepdim": False}),
    _kind("var", _ref(np.var, _correction), params=("dim", "unbiased", "keepdim", "correction"),
          aten=("var.correction", "var.dim"), scaling="mean", unsupported=_UNVERIFIED, formula="var" + _STAT,
          defaults={**_ALL, "unbiased": True}),
    _kind("std", _ref(np.std, _correction), params=("dim", "unbiased", "keepdim", "correction"),
          aten=("std.correction", "std.dim"), scaling="mean", unsupported=_UNVERIFIED, formula="std" + _STAT,
          defaults={**_ALL, "unbiased": True}),
    # torch.nansum: the contract reads it (a sum with NaN as 0); the graph reader does not spell it yet
    _kind("nansum", _ref(np.nansum), functions=(), scaling="sum", unsupported=_UNVERIFIED,
          formula="sum_{{{dim}}} {x} (NaN as 0)", defaults=_ALL),
    # torch.max(x, dim)[0] / .values: the graph reader turns these into max_dim / min_dim
    _kind("max_dim", _ref(np.max), functions=(), aten=("max.dim",), spelled_as="amax", formula=_MAX),
    _kind("min_dim", _ref(np.min), functions=(), aten=("min.dim",), spelled_as="amin", formula=_MIN),
    OpKind("norm", "reduction", reduced_shape, None, functions=("norm", "linalg.norm", "linalg.vector_norm"),
           methods=("norm",), params=("p", "dim", "keepdim"), pattern="C", decompose=_norm_parts,
           aten=("aten.linalg_vector_norm.default",)),
    _kind("argmax", _arg(np.argmax), role="argreduce", aten=("argmax.default",), defaults=_ALL),
    _kind("argmin", _arg(np.argmin), role="argreduce", aten=("argmin.default",), defaults=_ALL),
    TOPK,
    TOPK_INDICES,
)
