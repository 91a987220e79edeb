"""Normalisations: batch, layer, group, instance and RMS norm. Each keeps its input's shape; the
module forms create an affine weight and bias (and BatchNorm its running statistics) in __init__.

The reference is the training-mode statistics for BatchNorm (what a freshly built module in its
default mode computes) and the plain definitions for the others; the affine weight and bias are
inputs of the node when the module has them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import (
    REQUIRED,
    Decomposition,
    Operand,
    OpError,
    OpKind,
    Shape,
    ShapeOf,
    Statistic,
    StatisticOf,
    axes_of,
    axis,
    index_letters,
    part,
    same_shape,
    shown,
)
from pypto_tui.ops.idiom import Args, Call, Idiom, Match, PlusConst, Tensor, square


def _affine(y: np.ndarray, w: np.ndarray | None, b: np.ndarray | None, axis: int) -> np.ndarray:
    shape = [1] * y.ndim
    if w is not None:
        shape[axis:axis + w.ndim] = list(w.shape)
        y = y * w.reshape(shape)
    if b is not None:
        shape = [1] * y.ndim
        shape[axis:axis + b.ndim] = list(b.shape)
        y = y + b.reshape(shape)
    return y


def _batch_norm(x: np.ndarray, w: np.ndarray | None = None, b: np.ndarray | None = None, eps: float = 1e-5,
                **_: Any) -> np.ndarray:
    axes = (0, *range(2, x.ndim))
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return _affine((x - m) / np.sqrt(v + eps), w, b, 1)


def _instance_norm(x: np.ndarray, w: np.ndarray | None = None, b: np.ndarray | None = None, eps: float = 1e-5,
                   **_: Any) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return _affine((x - m) / np.sqrt(v + eps), w, b, 1)


def _layer_norm(x: np.ndarray, w: np.ndarray | None = None, b: np.ndarray | None = None, eps: float = 1e-5,
                normalized_shape: Any = None, **_: Any) -> np.ndarray:
    k = len(normalized_shape) if isinstance(normalized_shape, tuple | list) else 1
    axes = tuple(range(x.ndim - k, x.ndim))
    m, v = x.mean(axis=axes, keepdims=True), x.var(axis=axes, keepdims=True)
    return _affine((x - m) / np.sqrt(v + eps), w, b, x.ndim - k)


def _group_norm(x: np.ndarray, w: np.ndarray | None = None, b: np.ndarray | None = None, eps: float = 1e-5,
                num_groups: int = 1, **_: Any) -> np.ndarray:
    n = x.shape[0]
    g = x.reshape(n, num_groups, -1)
    m, v = g.mean(axis=2, keepdims=True), g.var(axis=2, keepdims=True)
    return _affine(((g - m) / np.sqrt(v + eps)).reshape(x.shape), w, b, 1)


def _rms_norm(x: np.ndarray, w: np.ndarray | None = None, eps: float | None = None, normalized_shape: Any = None,
              dim: Any = None, keepdim: bool = True, dtype: Any = np.float32, **_: Any) -> np.ndarray:
    """RMS norm over the trailing `normalized_shape` axes, or over `dim` (the written-out form
    `x / sqrt(mean(x**2, dim, keepdim) + eps)` names its axes). eps None is the machine epsilon of the
    input's dtype (torch's default; the arrays here are float64, so the caller says which)."""
    if dim is not None:
        axes = tuple(sorted({axis(d, x.ndim) for d in (dim if isinstance(dim, tuple | list) else (dim,))}))
        at = axes[0] if axes else x.ndim
    else:
        k = len(normalized_shape) if isinstance(normalized_shape, tuple | list) else 1
        axes = tuple(range(x.ndim - k, x.ndim))
        at = x.ndim - k
    e = float(np.finfo(dtype).eps) if eps is None else eps
    return _affine(x / np.sqrt(np.mean(x * x, axis=axes, keepdims=keepdim) + e), w, None, at)


def _axes(x: np.ndarray, dim: Any) -> tuple[int, ...]:
    dims = dim if isinstance(dim, tuple | list) else (dim,)
    return tuple(sorted({axis(d, x.ndim) for d in dims}))


def _frobenius_norm(x: np.ndarray, eps: float | None = None, **_: Any) -> np.ndarray:
    """x divided by its Frobenius norm (every element), plus eps when the task adds one."""
    return np.asarray(x / (np.sqrt(np.sum(x * x)) + (eps or 0.0)))


def _lp_normalise(p: int) -> Any:
    def ref(x: np.ndarray, dim: Any = 1, keepdim: bool = True, eps: float | None = None, mean: bool = False,
            clamp_eps: bool = False, **_: Any) -> np.ndarray:
        """x divided by its L1 norm (sum, or mean when `mean`, of |x|) or L2 norm over `dim`: F.normalize
        (`clamp_eps`: max(norm, eps), eps 1e-12 by default) or the written-out `x / (norm + eps)`."""
        axes = _axes(x, dim)
        if p == 1:
            stat = (np.mean if mean else np.sum)(np.abs(x), axis=axes, keepdims=keepdim)
        else:
            stat = np.sqrt(np.sum(x * x, axis=axes, keepdims=keepdim))
        if clamp_eps:
            return np.asarray(x / np.maximum(stat, 1e-12 if eps is None else eps))
        return np.asarray(x / (stat + (eps or 0.0)))
    return ref


def _normalize(x: np.ndarray, p: float = 2.0, dim: Any = 1, eps: float = 1e-12, **_: Any) -> np.ndarray:
    return np.asarray(_lp_normalise(int(p))(x, dim=dim, eps=eps, clamp_eps=True))


def _normalize_parts(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """F.normalize as the graph of its trace: the vector norm over `dim` (kept; the reduce kinds' `norm`
    decomposes it further), clamped at eps, expanded to x's shape, dividing x. p other than 1 and 2 stays
    whole (refused by name)."""
    p, x = n.attrs.get("p", 2.0), n.inputs[0]
    shape = shape_of(x)
    if p not in (1, 2) or shape is None:
        return None
    from pypto_tui.ops.reduce import reduced_shape
    from pypto_tui.ops.views import Step

    dim = n.attrs.get("dim", 1)
    kept = reduced_shape([shape], {"dim": dim, "keepdim": True})
    nid = n.id
    return Decomposition((
        part(n, "_norm", "norm", "reduction", (x,), {"p": p, "dim": dim, "keepdim": True}, kept),
        part(n, "_clamp", "clamp", "elementwise", (f"{nid}_norm",), {"min": float(n.attrs.get("eps", 1e-12))},
             kept),
        part(n, "_wide", "view", "view", (f"{nid}_clamp",), {"steps": (Step("expand", shape=n.shape),)}, n.shape),
        part(n, "", "div", "elementwise", (x, f"{nid}_wide"), {}, n.shape)))


def _channels(attrs: Mapping[str, Any], key: str) -> int:
    c = attrs.get(key)
    if not isinstance(c, int):
        raise OpError(f"the norm's {key} must be a constant")
    return c


def _bn_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    c = _channels(attrs, "num_features")
    out: dict[str, Shape] = {"weight": (c,), "bias": (c,)} if attrs.get("affine", True) else {}
    if attrs.get("track_running_stats", True):
        out.update(running_mean=(c,), running_var=(c,))
    return out


def _in_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    c = _channels(attrs, "num_features")
    return {"weight": (c,), "bias": (c,)} if attrs.get("affine", False) else {}


def _gn_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    c = _channels(attrs, "num_channels")
    return {"weight": (c,), "bias": (c,)} if attrs.get("affine", True) else {}


def _normalized(attrs: Mapping[str, Any]) -> Shape:
    s = attrs.get("normalized_shape")
    shape = tuple(s) if isinstance(s, tuple | list) else (s,)
    if not all(isinstance(d, int) for d in shape):
        raise OpError("normalized_shape must be constants")
    return shape


def _ln_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    s = _normalized(attrs)
    if not attrs.get("elementwise_affine", True):
        return {}
    return {"weight": s, "bias": s} if attrs.get("bias", True) else {"weight": s}


def _rms_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    return {"weight": _normalized(attrs)} if attrs.get("elementwise_affine", True) else {}


def _checked(kind: str) -> Any:
    def shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
        x = tuple(shapes[0])
        if kind in ("batch_norm", "instance_norm", "group_norm") and len(x) < 2:
            raise OpError(f"{kind} needs (N, C, ...) input, got {x}")
        if kind == "group_norm":
            g = attrs.get("num_groups")
            if isinstance(g, int) and (g <= 0 or x[1] % g):
                raise OpError(f"{x[1]} channels do not split into {g} groups")
        if kind in ("layer_norm", "rms_norm") and attrs.get("normalized_shape") is not None:
            s = _normalized(attrs)
            if x[len(x) - len(s):] != s:
                raise OpError(f"normalized_shape {s} is not the trailing part of {x}")
        return same_shape(shapes, attrs)
    return shape


def _batch_norm_eval(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """BatchNorm in eval mode (`training: False`: the task's module was put in eval mode, or traced as
    `_native_batch_norm_legit_no_training`) as its composition: a per-channel affine map with the
    module's own running statistics, (x - running_mean) * rsqrt(running_var + eps) * weight + bias,
    each (C,) tensor viewed as (C, 1, ...) against (N, C, ...). No statistic is computed, so each part is
    an elementwise kernel's (the rsqrt on the (C, 1, ...) statistics one of its own). The last node keeps
    the id."""
    x = n.inputs[0]
    shape = shape_of(x)
    named = {i.rsplit(".", 1)[-1]: i for i in n.inputs[1:]}
    if shape is None or len(shape) < 2 or not {"running_mean", "running_var"} <= set(named):
        return None
    nid = n.id
    per_channel = (shape[1], *(1,) * (len(shape) - 2))
    eps = (f"{nid}_eps", float(n.attrs.get("eps", 1e-5)), "BatchNorm eps")
    from pypto_tui.ops.views import Step

    def view(name: str) -> Any:
        return part(n, f"_{name}", "view", "view", (named[name],), {"steps": (Step("reshape", shape=per_channel),)},
                    per_channel)

    parts = [view("running_mean"), view("running_var"),
             part(n, "_dev", "sub", "elementwise", (x, f"{nid}_running_mean"), {}, n.shape),
             part(n, "_veps", "add", "elementwise", (f"{nid}_running_var", eps[0]), {}, per_channel),
             part(n, "_inv", "rsqrt", "elementwise", (f"{nid}_veps",), {}, per_channel),
             part(n, "_norm", "mul", "elementwise", (f"{nid}_dev", f"{nid}_inv"), {}, n.shape)]
    if "weight" in named and "bias" in named:
        parts += [view("weight"), view("bias"),
                  part(n, "_scaled", "mul", "elementwise", (f"{nid}_norm", f"{nid}_weight"), {}, n.shape),
                  part(n, "", "add", "elementwise", (f"{nid}_scaled", f"{nid}_bias"), {}, n.shape)]
    else:
        parts[-1] = replace(parts[-1], id=nid)
    return Decomposition(tuple(parts), (eps,))


def _batch_norm_rows(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """BatchNorm1d on (B, F) in training mode as its composition: the batch statistics are column
    means (m = mean(x, 0), v = mean((x - m)^2, 0), biased as training mode normalizes), then
    (x - m) * rsqrt(v + eps) * weight + bias. The (B, C, S) pattern has no spatial axis here; each
    part is a kernel the level-1 patterns write. The last node keeps the id. In eval mode the module's
    running statistics are used instead (`_batch_norm_eval`), at any rank."""
    if n.attrs.get("training") is False:
        return _batch_norm_eval(n, shape_of)
    x = n.inputs[0]
    if len(shape_of(x) or ()) != 2:
        return None
    nid = n.id
    rows = (1, *n.shape[1:])
    eps = (f"{nid}_eps", float(n.attrs.get("eps", 1e-5)), "BatchNorm eps")
    two = (f"{nid}_two", 2.0, "BatchNorm variance")
    parts = [part(n, "_mean", "mean", "reduction", (x,), {"dim": 0, "keepdim": True}, rows),
             part(n, "_dev", "sub", "elementwise", (x, f"{nid}_mean"), {}, n.shape),
             part(n, "_sq", "pow", "elementwise", (f"{nid}_dev", two[0]), {}, n.shape),
             part(n, "_var", "mean", "reduction", (f"{nid}_sq",), {"dim": 0, "keepdim": True}, rows),
             part(n, "_veps", "add", "elementwise", (f"{nid}_var", eps[0]), {}, rows),
             part(n, "_inv", "rsqrt", "elementwise", (f"{nid}_veps",), {}, rows),
             part(n, "_norm", "mul", "elementwise", (f"{nid}_dev", f"{nid}_inv"), {}, n.shape)]
    if n.attrs.get("affine", True) and len(n.inputs) >= 3:
        parts += [part(n, "_scaled", "mul", "elementwise", (f"{nid}_norm", n.inputs[1]), {}, n.shape),
                  part(n, "", "add", "elementwise", (f"{nid}_scaled", n.inputs[2]), {}, n.shape)]
    else:
        parts[-1] = replace(parts[-1], id=nid)
    return Decomposition(tuple(parts), (eps, two))


TENSOR_PARAMS = ("weight", "bias", "running_mean", "running_var")
"""The norms' parameters that are tensors (the affine weight and bias, the running statistics)."""
STATE_PARAMS = ("momentum",)
"""Parameters that update the module's running statistics only: not what forward returns."""

# ------------------------------------------------------------------ the contract's statistic
def _affine_note(a: Mapping[str, Any], key: str = "affine") -> str:
    return "; affine weight=1, bias=0 at init" if a.get(key) else ""


def _channels_differ(a: Mapping[str, Any], shape: Shape, key: str) -> dict[str, str]:
    want = a.get(key)
    if isinstance(want, int) and len(shape) > 1 and shape[1] != want:
        return {"output_shape": f"{key}={want} but the input has {shape[1]} channels: the baseline fails"}
    return {}


def _unkept(a: Mapping[str, Any], axes: tuple[int, ...], rank: int) -> dict[str, str]:
    """A statistic over an axis other than the last, not kept: dividing broadcasts it elsewhere."""
    if not a.get("keepdim") and any(i != rank - 1 for i in axes):
        return {"formula": "the statistic is not kept (keepdim=False), so dividing broadcasts it against other "
                           "axes; check the baseline"}
    return {}


def _dim_axes(a: Mapping[str, Any], rank: int, op: str) -> tuple[int, ...]:
    if "dim" not in a:
        raise OpError(f"'dim' of {op} is not known")
    axes = axes_of(a["dim"], rank)
    if axes is None:
        raise OpError(f"dim={a['dim']!r} is not an axis of a rank-{rank} input")
    return axes


def _trailing(shape: Shape, a: Mapping[str, Any]) -> tuple[tuple[int, ...], int] | None:
    """The last len(normalized_shape) axes and their count; None when the call gives no normalized_shape."""
    if "normalized_shape" not in a:
        return None
    ns = a["normalized_shape"]
    ns = (ns,) if isinstance(ns, int) else tuple(ns or ())
    rank = len(shape)
    if tuple(shape[rank - len(ns):]) != ns:
        raise OpError(f"normalized_shape {ns} does not match the trailing dims of {shape}")
    return tuple(range(rank - len(ns), rank)), math.prod(ns)


def _batch_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    shape, n = ops[0].shape, ops[0].name
    rank = len(shape)
    if rank < 2:
        raise OpError("BatchNorm needs at least (N, C)")
    axes = (0, *range(2, rank))
    count = math.prod(shape[i] for i in axes)
    training = a.get("training", True)
    mode = "batch statistics (training mode)" if training else "running statistics"
    return Statistic("mean_var", axes, True, "mean", count,
                     f"out = ({n} - mean_c) / sqrt(var_c + {shown(a.get('eps'))}), mean/var per channel c over "
                     f"(N, {', '.join('HWD'[: rank - 2]) or '-'}) = {count} values, biased var, {mode}"
                     + _affine_note(a), _channels_differ(a, shape, "num_features"),
                     "" if training else "normalising with running statistics: their values are not in the task file")


def _instance_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    shape, n = ops[0].shape, ops[0].name
    axes = tuple(range(2, len(shape)))
    count = math.prod(shape[i] for i in axes) if axes else 1
    unknown = ({"formula": "track_running_stats=True: in training mode batch statistics are used"}
               if a.get("track_running_stats") else {})
    return Statistic("mean_var", axes, True, "mean", count,
                     f"out = ({n} - mean_nc) / sqrt(var_nc + {shown(a.get('eps'))}), per (n, c) over the {count} "
                     "spatial values, biased var" + _affine_note(a), unknown)


def _group_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    shape, n = ops[0].shape, ops[0].name
    g, rank = a.get("num_groups"), len(shape)
    if not isinstance(g, int) or g <= 0:
        raise OpError("num_groups is not known")
    if rank < 2 or shape[1] % g:
        raise OpError(f"{shape[1] if rank > 1 else '?'} channels do not split into {g} groups")
    count = shape[1] // g * math.prod(shape[2:])
    return Statistic("mean_var", tuple(range(1, rank)), True, "mean", count,
                     f"out = ({n} - mean_ng) / sqrt(var_ng + {shown(a.get('eps'))}), per sample n and group g over "
                     f"(C/G={shape[1] // g}{''.join(', ' + str(s) for s in shape[2:])}) = {count} values, "
                     f"G = {g}, biased var" + _affine_note(a), _channels_differ(a, shape, "num_channels"))


def _layer_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic | None:
    shape, n = ops[0].shape, ops[0].name
    trailing = _trailing(shape, a)
    if trailing is None:
        return None
    axes, count = trailing
    return Statistic("mean_var", axes, True, "mean", count,
                     f"out = ({n} - mean) / sqrt(var + {shown(a.get('eps'))}), over the last {len(axes)} axes "
                     f"({count} values), biased var" + _affine_note(a, "elementwise_affine"))


def _rms_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    """Over normalized_shape's trailing axes (RMSNorm, F.rms_norm) or a written-out form's dim."""
    shape, n = ops[0].shape, ops[0].name
    eps, rank = a.get("eps"), len(shape)
    trailing = _trailing(shape, a)
    if trailing is not None:
        axes, count = trailing
        e = "machine eps" if eps is None else shown(eps)
        return Statistic("mean_square", axes, True, "mean", count,
                         f"out = {n} / sqrt(mean({n}^2 over axes {list(axes)}) + {e})")
    axes = _dim_axes(a, rank, "rms_norm")
    count = math.prod(shape[i] for i in axes)
    letters = index_letters(rank)
    at = f"{n}[{', '.join(letters)}]" if letters else n
    return Statistic("mean_square", axes, bool(a.get("keepdim", False)), "mean", count,
                     f"out = {n} / sqrt(sum_{{{','.join(letters[i] for i in axes)}}} {at}^2 / {count} + {shown(eps)})"
                     f"  (over axis {list(axes)})", _unkept(a, axes, rank))


def _frobenius_statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
    shape, n = ops[0].shape, ops[0].name
    eps = a.get("eps")
    e = f" + {shown(eps)}" if eps else ""
    return Statistic("sum_square", tuple(range(len(shape))), True, "sum", None,
                     f"out = {n} / sqrt(sum over all {math.prod(shape)} elements of {n}^2{e})")


def _lp_statistic(p: int) -> StatisticOf:
    """x over its p-norm (1 or 2) along dim, or its mean absolute value (`mean`); F.normalize's norm is
    clamped below at eps (`clamp_eps`), a written-out one has eps added."""
    def statistic(ops: Sequence[Operand], a: Mapping[str, Any]) -> Statistic:
        shape, n = ops[0].shape, ops[0].name
        rank, eps, mean = len(shape), a.get("eps"), bool(a.get("mean"))
        axes = _dim_axes(a, rank, f"l{p}_norm")
        count = math.prod(shape[i] for i in axes)
        stat = f"mean |{n}|" if mean else f"sum |{n}|" if p == 1 else f"sqrt(sum {n}^2)"
        if a.get("clamp_eps"):
            formula, unknown = f"out = {n} / max({stat} over axis {list(axes)}, {shown(eps)})", {}
        else:
            e = f" + {shown(eps)}" if eps else ""
            formula, unknown = f"out = {n} / ({stat} over axis {list(axes)}{e})", _unkept(a, axes, rank)
        return Statistic("sum_abs" if p == 1 else "sum_square", axes, bool(a.get("keepdim", False)),
                         "mean" if mean else "sum", count if mean else None, formula, unknown)
    return statistic


# ------------------------------------------------------------------ written-out forms (ops/idiom.py)
_X = Tensor("x")


def _sqrt_of(reduce: tuple[str, ...]) -> Call:
    """sqrt(reduce(x ** 2, dim, keepdim) + eps), the reduction named `stat`."""
    return Call(("sqrt",), (PlusConst(Call(reduce, (square(_X),), "stat"), "eps"),))


def _eps(m: Match, *params: str) -> dict[str, Any]:
    """The statistic's parameters, then eps (0 when the form adds none)."""
    return {**m.params("stat", *params), "eps": m.consts.get("eps") or 0.0}


def _frobenius_eps(m: Match) -> dict[str, Any]:
    return {"eps": m.consts["eps"]} if m.consts.get("eps") else {}


def _by_norm(*orders: Any, whole: bool | None = None) -> Args:
    """The op_args of x / (torch.norm(x, p, dim, keepdim) + eps) when p (linalg's ord) is one of `orders`
    and the call reduces every axis (`whole`) or not (None: either); else None."""
    def args(m: Match) -> dict[str, Any] | None:
        order = "p" if m.name("stat") == "norm" else "ord"
        values = m.params("stat", order, "dim", "keepdim")
        if values.pop(order, None) not in orders or (whole is not None and (values.get("dim") is None) != whole):
            return None
        return _frobenius_eps(m) if whole else {**values, "eps": m.consts.get("eps") or 0.0}
    return args


def _by_normalize(*orders: Any) -> Args:
    """The op_args of F.normalize(x, p, dim, eps) when p is one of `orders`: x over its p-norm along dim,
    the norm clamped below at eps."""
    def args(m: Match) -> dict[str, Any] | None:
        values = m.params("stat", "p", "dim", "eps")
        return {**values, "keepdim": True, "clamp_eps": True} if values.get("p") in orders else None
    return args


_NORMALIZE = Call(("normalize",), (_X,), "stat")
_TWO = (None, "fro", 2, 2.0)
_BY_NORM = Call(("div",), (_X, PlusConst(Call(("norm", "linalg.norm", "linalg.vector_norm"), (_X,), "stat"), "eps")))
_BY_SUM_SQUARE = Call(("div",), (_X, _sqrt_of(("sum",))))
_RMS = (
    # x * rsqrt(mean(x ** 2, dim, keepdim) + eps), x / sqrt(mean(x ** 2, dim, keepdim) + eps)
    Idiom(Call(("mul",), (_X, Call(("rsqrt",), (PlusConst(Call(("mean",), (square(_X),), "stat"), "eps"),)))),
          lambda m: _eps(m, "dim", "keepdim")),
    Idiom(Call(("div",), (_X, _sqrt_of(("mean",)))), lambda m: _eps(m, "dim", "keepdim")),
)
_FROBENIUS = (
    # x / sqrt(sum(x ** 2) + eps), x / (torch.norm(x) + eps)
    Idiom(_BY_SUM_SQUARE, lambda m: _frobenius_eps(m) if m.whole("stat") else None),
    Idiom(_BY_NORM, _by_norm(*_TWO, whole=True)),
)
_L2 = (
    # x / sqrt(sum(x ** 2, dim, keepdim) + eps), x / (torch.norm(x, 2, dim, keepdim) + eps)
    Idiom(_BY_SUM_SQUARE, lambda m: None if m.whole("stat") else _eps(m, "dim", "keepdim")),
    Idiom(_BY_NORM, _by_norm(*_TWO, whole=False)),
    Idiom(_NORMALIZE, _by_normalize(2, 2.0)),
)
_L1 = (
    # x / (torch.norm(x, 1, dim, keepdim) + eps), x / (sum|mean(|x|, dim, keepdim) + eps)
    Idiom(_BY_NORM, _by_norm(1, 1.0)),
    Idiom(_NORMALIZE, _by_normalize(1)),
    Idiom(Call(("div",), (_X, PlusConst(Call(("sum", "mean"), (Call(("abs",), (_X,)),), "stat"), "eps"))),
          lambda m: {**_eps(m, "dim", "keepdim"), **({"mean": True} if m.name("stat") == "mean" else {})}),
)

KINDS: tuple[OpKind, ...] = (
    OpKind("batch_norm", "norm", _checked("batch_norm"), _batch_norm, statistic=_batch_statistic,
           functions=("batch_norm",),
           modules=("BatchNorm1d", "BatchNorm2d", "BatchNorm3d"), params=("running_mean", "running_var", "weight",
                                                                          "bias", "training", "momentum", "eps"),
           defaults={"training": False, "momentum": 0.1, "eps": 1e-5},
           pattern="C", weights=_bn_weights, note="training-mode statistics (the module's default mode)",
           decompose=_batch_norm_rows, aten=("aten._native_batch_norm_legit_no_training.default",),
           module_signature=(("num_features", REQUIRED), ("eps", 1e-5), ("momentum", 0.1), ("affine", True),
                             ("track_running_stats", True))),
    OpKind("instance_norm", "norm", _checked("instance_norm"), _instance_norm, statistic=_instance_statistic,
           functions=("instance_norm",),
           modules=("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"), pattern="C", weights=_in_weights,
           params=("running_mean", "running_var", "weight", "bias", "use_input_stats", "momentum", "eps"),
           defaults={"use_input_stats": True, "momentum": 0.1, "eps": 1e-5},
           aten=("aten.instance_norm.default",),
           module_signature=(("num_features", REQUIRED), ("eps", 1e-5), ("momentum", 0.1), ("affine", False),
                             ("track_running_stats", False))),
    OpKind("layer_norm", "norm", _checked("layer_norm"), _layer_norm, statistic=_layer_statistic,
           functions=("layer_norm",),
           modules=("LayerNorm",), params=("normalized_shape", "weight", "bias", "eps"), pattern="C",
           defaults={"eps": 1e-5},
           weights=_ln_weights, aten=("aten.layer_norm.default", "aten.native_layer_norm.default"),
           module_signature=(("normalized_shape", REQUIRED), ("eps", 1e-5), ("elementwise_affine", True),
                             ("bias", True))),
    OpKind("group_norm", "norm", _checked("group_norm"), _group_norm, statistic=_group_statistic,
           functions=("group_norm",),
           modules=("GroupNorm",), params=("num_groups", "weight", "bias", "eps"), pattern="C", weights=_gn_weights,
           defaults={"eps": 1e-5},
           aten=("aten.group_norm.default", "aten.native_group_norm.default"),
           module_signature=(("num_groups", REQUIRED), ("num_channels", REQUIRED), ("eps", 1e-5), ("affine", True))),
    OpKind("rms_norm", "norm", _checked("rms_norm"), _rms_norm, statistic=_rms_statistic,
           functions=("rms_norm",), modules=("RMSNorm",),
           params=("normalized_shape", "weight", "eps"), pattern="C", weights=_rms_weights, defaults={"eps": None},
           aten=("aten.rms_norm.default",), idioms=_RMS,
           module_signature=(("normalized_shape", REQUIRED), ("eps", None), ("elementwise_affine", True))),
)
# Normalisations the contract reads from their written-out forms (and F.normalize): no spelling of
# their own, so the graph reader keeps such a forward as its elementwise nodes and reductions.
WRITTEN_KINDS = (
    OpKind("frobenius_norm", "norm", same_shape, _frobenius_norm, statistic=_frobenius_statistic,
           params=("eps",), pattern="C", idioms=_FROBENIUS),
    OpKind("l1_norm", "norm", same_shape, _lp_normalise(1), statistic=_lp_statistic(1),
           params=("dim", "keepdim", "eps"), pattern="C",
           idioms=_L1),
    OpKind("l2_norm", "norm", same_shape, _lp_normalise(2), statistic=_lp_statistic(2),
           params=("dim", "keepdim", "eps"), pattern="C",
           idioms=_L2),
    # F.normalize inside a chain: its parts (a norm, a clamp, a divide); alone, the contract's l1/l2_norm
    OpKind("normalize", "norm", same_shape, _normalize, functions=("normalize",), params=("p", "dim", "eps"),
           decompose=_normalize_parts, defaults={"p": 2.0, "dim": 1, "eps": 1e-12},
           unsupported="F.normalize is scaffolded for p=1 and p=2 (the l1 and l2 norms); "
                       "another p has no kernel"),
)
KINDS = KINDS + WRITTEN_KINDS

