"""The contract's own reference in numpy: what the contract *says* the task computes.

It is built only from the contract's fields (family, op, op_args, axes, scaling), never from
the task file's code, so comparing it with the real baseline (`self_check`) tests the contract,
not the parser. Everything is computed in float64; the caller chooses the tolerance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pypto_tui.contract import ir, views
from pypto_tui.contract.model import Contract, norm_axes
from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, bind
from pypto_tui.ops import elementwise as ops_elementwise
from pypto_tui.ops import views as ops_views


class NoReference(Exception):
    """The contract's op has no numpy reference (unsupported family, unknown fields)."""


# The elementwise references live in the operator registry (pypto_tui.ops.elementwise).
UNARY = ops_elementwise.UNARY
BINARY = ops_elementwise.BINARY


def _f64(a: Any) -> np.ndarray:
    arr = np.asarray(a)
    if arr.dtype.kind in "fc" or arr.dtype.kind == "V":
        return arr.astype(np.float64)
    return arr


def reference(contract: Contract, arrays: Sequence[np.ndarray],
              scalars: Mapping[str, Any] | None = None) -> np.ndarray:
    """Evaluate the contract on `arrays` (its tensor inputs, in input order).

    `scalars` overrides the values of scalar inputs (by name); by default the values read from
    get_inputs() are used. Raises NoReference when the contract's op has no reference.
    """
    tensors = contract.tensor_inputs
    if len(arrays) != len(tensors):
        raise ValueError(f"reference takes {len(tensors)} arrays (one per tensor input), got {len(arrays)}")
    env: dict[str, Any] = {t.name: _f64(a) for t, a in zip(tensors, arrays, strict=True)}
    for s in contract.scalar_inputs:
        env[s.name] = (scalars or {}).get(s.name, s.value)
    names = contract.op_args.get("operands") or [t.name for t in tensors]
    ops = [env[n] for n in names if n in env]
    if not ops:
        raise NoReference("the contract names no tensor operand")
    fn = _FAMILIES.get(contract.family)
    if fn is None:
        raise NoReference(f"no reference for family '{contract.family}'")
    out = fn(contract, ops, env)
    return np.asarray(out)


# ================================================================================ families
def _elementwise(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    a = dict(c.op_args)
    op = c.op or ""
    x = ops[0]
    if op == "expression":
        if "expr" not in a:
            raise NoReference("an elementwise expression without its tree")
        return eval_expr(ir.from_data(_thaw(a["expr"])), env)
    if op in UNARY:
        params = {k: v for k, v in a.items() if k not in ("operands",) and v is not None}
        return UNARY[op](x, **params)
    if op in BINARY:
        if a.get("scalar_input") or a.get("scalar") is not None:
            s = env.get(a["scalar_input"]) if a.get("scalar_input") else a.get("scalar")
            return BINARY[op](x, s) if a.get("scalar_side", "right") == "right" else BINARY[op](s, x)
        if len(ops) < 2:
            raise NoReference(f"{op} needs two operands")
        return BINARY[op](ops[0], ops[1])
    raise NoReference(f"no reference for elementwise op '{op}'")


def eval_expr(n: ir.Node, env: Mapping[str, Any]) -> Any:
    """Evaluate an elementwise expression tree with numpy."""
    if n.kind == "in":
        return env[n.name]
    if n.kind == "const":
        return n.value
    if views.is_view(n) and not (n.kind == "index" and n.args[0].kind == "attr"):
        shapes = {k: tuple(v.shape) for k, v in env.items() if isinstance(v, np.ndarray)}
        try:
            name, steps, _ = views.chain(n, shapes)
        except views.NotAView as exc:
            raise NoReference(str(exc)) from None
        x = env[name]
        for step in steps:
            x = ops_views.apply(step, x)
        return x
    if n.kind == "neg":
        return -eval_expr(n.args[0], env)
    if n.kind == "bin":
        return BINARY[n.name](eval_expr(n.args[0], env), eval_expr(n.args[1], env))
    if n.kind == "call":
        if n.name in ("maximum", "minimum"):
            return BINARY[n.name](eval_expr(n.args[0], env), eval_expr(n.args[1], env))
        if n.name == "where":
            c, x, y = (eval_expr(a, env) for a in n.args[:3])
            return np.where(c, x, y)
        if n.name == "pow":
            return np.power(eval_expr(n.args[0], env), eval_expr(n.args[1], env))
        if n.name in UNARY:
            params = FUNC_SIGS.get(n.name, ("input",))
            bound, _ = bind(params, n.args, n.kw(), FUNC_DEFAULTS.get(n.name))
            x = eval_expr(bound.pop("input"), env)
            kwargs = {k: (eval_expr(v, env) if isinstance(v, ir.Node) else v) for k, v in bound.items()
                      if k != "inplace"}
            return UNARY[n.name](x, **{k: v for k, v in kwargs.items() if v is not None})
    raise NoReference(f"cannot evaluate '{ir.render(n)}'")


def _softmax(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    if c.reduction is None:
        raise NoReference("softmax without its axis")
    (axis,) = c.reduction.axes
    x = ops[0]
    m = x.max(axis=axis, keepdims=True)
    lse = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return x - lse if c.op == "log_softmax" else np.exp(x - lse)


def _reduction(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    r = c.reduction
    if r is None:
        raise NoReference("reduction contract unknown")
    x = ops[0]
    if c.op_args.get("operand_expr") is not None:
        x = eval_expr(ir.from_data(_thaw(c.op_args["operand_expr"])), env)
    axes, kd = tuple(r.axes), r.keepdim
    op = c.op or r.op
    if op in ("sum", "nansum"):
        return (np.nansum if op == "nansum" else np.sum)(x, axis=axes, keepdims=kd)
    if op == "mean":
        # the count comes from the arrays, not r.count: the reference must work at any size
        return np.sum(x, axis=axes, keepdims=kd) / max(1, math.prod(x.shape[a] for a in axes))
    if op == "prod":
        return np.prod(x, axis=axes, keepdims=kd)
    if op in ("max", "amax"):
        return np.max(x, axis=axes, keepdims=kd)
    if op in ("min", "amin"):
        return np.min(x, axis=axes, keepdims=kd)
    if op in ("argmax", "argmin"):
        f = np.argmax if op == "argmax" else np.argmin
        if c.op_args.get("dim") is None:
            return np.asarray(f(x))
        (a,) = axes
        res = f(x, axis=a)
        return np.expand_dims(res, a) if kd else res
    if op == "logsumexp":
        m = np.max(x, axis=axes, keepdims=True)
        res = np.log(np.sum(np.exp(x - m), axis=axes, keepdims=True)) + m
        return res if kd else np.squeeze(res, axis=axes)
    if op in ("var", "std"):
        corr = c.op_args.get("correction", 1 if c.op_args.get("unbiased", True) else 0)
        v = np.var(x, axis=axes, keepdims=kd, ddof=corr)
        return np.sqrt(v) if op == "std" else v
    raise NoReference(f"no reference for reduction '{op}'")


def _normalise(x: np.ndarray, axes: tuple[int, ...], eps: float) -> np.ndarray:
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def _norm(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    x = ops[0]
    a = c.op_args
    op = c.op
    r = c.reduction
    eps = a.get("eps")
    if op in ("batch_norm", "instance_norm", "layer_norm") and r is not None:
        return _normalise(x, tuple(r.axes), 1e-5 if eps is None else eps)
    if op == "group_norm":
        g = a["num_groups"]
        n = x.shape[0]
        y = _normalise(x.reshape(n, g, -1), (2,), 1e-5 if eps is None else eps)
        return y.reshape(x.shape)
    if op == "rms_norm" and r is not None:
        if eps is None:
            dt = _input_dtype(c)
            eps = float(np.finfo(dt).eps)
        ms = np.mean(x * x, axis=tuple(r.axes), keepdims=r.keepdim)
        return x / np.sqrt(ms + eps)
    if op == "frobenius_norm":
        return x / (np.sqrt(np.sum(x * x)) + (eps or 0.0))
    if op in ("l1_norm", "l2_norm") and r is not None:
        axes = tuple(r.axes)
        if op == "l1_norm":
            stat = np.mean(np.abs(x), axis=axes, keepdims=r.keepdim) if a.get("mean") else np.sum(
                np.abs(x), axis=axes, keepdims=r.keepdim)
        else:
            stat = np.sqrt(np.sum(x * x, axis=axes, keepdims=r.keepdim))
        if a.get("clamp_eps"):
            return x / np.maximum(stat, 1e-12 if eps is None else eps)
        return x / (stat + (eps or 0.0))
    raise NoReference(f"no reference for norm '{op}'")


def _input_dtype(c: Contract) -> Any:
    d = c.tensor_inputs[0].dtype if c.tensor_inputs else "fp32"
    return {"fp16": np.float16, "bf16": np.float32, "fp64": np.float64}.get(d or "fp32", np.float32)


def _reduce_loss(term: np.ndarray, reduction: str, batch: int) -> np.ndarray:
    if reduction == "mean":
        return np.asarray(term.mean())
    if reduction == "sum":
        return np.asarray(term.sum())
    if reduction == "batchmean":
        return np.asarray(term.sum() / batch)
    if reduction == "none":
        return term
    raise NoReference(f"reduction '{reduction}'")


def _pdist(u: np.ndarray, v: np.ndarray, p: float, eps: float) -> np.ndarray:
    d = np.abs(u - v + eps)
    if p == math.inf:
        return d.max(axis=-1)
    return np.sum(d**p, axis=-1) ** (1.0 / p)


def _loss(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    a = c.op_args
    op = c.op
    red = a.get("reduction", "mean")
    if op in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "hinge_loss", "kl_div"):
        p, t = ops[0], ops[1]
        batch = p.shape[0] if p.ndim else 1
        if op == "mse_loss":
            term = (p - t) ** 2
        elif op == "l1_loss":
            term = np.abs(p - t)
        elif op == "smooth_l1_loss":
            beta = a.get("beta", 1.0)
            d = np.abs(p - t)
            term = d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
        elif op == "huber_loss":
            delta = a.get("delta", 1.0)
            d = np.abs(p - t)
            term = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
        elif op == "hinge_loss":
            term = np.maximum(a.get("margin", 1.0) - p * t, 0.0)
        else:
            tf = a.get("input_transform")
            if tf == "log":
                inp = np.log(p)
            elif tf == "log_softmax":
                axis = a.get("transform_dim", -1)
                m = p.max(axis=axis, keepdims=True)
                inp = p - (np.log(np.exp(p - m).sum(axis=axis, keepdims=True)) + m)
            elif tf is None:
                inp = p
            else:
                raise NoReference(f"kl_div input transform '{tf}'")
            if a.get("log_target"):
                term = np.exp(t) * (t - inp)
            else:
                with np.errstate(divide="ignore", invalid="ignore"):
                    tlogt = np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)
                term = tlogt - t * inp
        return _reduce_loss(term, red, batch)
    if op == "triplet_margin_loss":
        an, po, ne = ops[:3]
        pn, eps, margin = a.get("p", 2.0), a.get("eps", 1e-6), a.get("margin", 1.0)
        d_ap = _pdist(an, po, pn, eps)
        d_an = _pdist(an, ne, pn, eps)
        if a.get("swap"):
            d_an = np.minimum(d_an, _pdist(po, ne, pn, eps))
        return _reduce_loss(np.maximum(d_ap - d_an + margin, 0.0), red, 1)
    if op == "cosine_similarity":
        x1, x2 = ops[:2]
        (d,) = norm_axes(a.get("dim", 1), x1.ndim) or (1,)
        eps = a.get("eps", 1e-8)
        n1 = np.maximum(np.sqrt(np.sum(x1 * x1, axis=d, keepdims=True)), eps)
        n2 = np.maximum(np.sqrt(np.sum(x2 * x2, axis=d, keepdims=True)), eps)
        cos = np.sum((x1 / n1) * (x2 / n2), axis=d)
        if a.get("reduction") in ("mean", "sum"):
            return _reduce_loss(a.get("offset", 1) - cos, a["reduction"], 1)
        return cos
    if op == "cross_entropy":
        x, t = ops[0], ops[1].astype(np.int64)
        m = x.max(axis=1, keepdims=True)
        logp = x - (np.log(np.exp(x - m).sum(axis=1, keepdims=True)) + m)
        nll = -np.take_along_axis(logp, np.expand_dims(t, 1), axis=1).squeeze(1)
        ls = a.get("label_smoothing", 0.0) or 0.0
        if ls:
            nll = (1 - ls) * nll - ls * logp.mean(axis=1)
        return _reduce_loss(nll, red, 1)
    raise NoReference(f"no reference for loss '{op}'")


def _matmul(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    a = c.op_args
    if c.op == "linear":
        raise NoReference("nn.Linear has learned weights")
    A, B = ops[0], ops[1]
    if c.op == "diag_matmul":
        return A * B[None, :] if a.get("diag_b") and not a.get("diag_a") else A[:, None] * B
    if a.get("transpose_a"):
        A = np.swapaxes(A, -1, -2)
    if a.get("transpose_b"):
        B = np.swapaxes(B, -1, -2)
    out = np.matmul(A, B)
    post = a.get("post")
    if post == "tril":
        out = np.tril(out, a.get("post_diagonal", 0))
    elif post == "triu":
        out = np.triu(out, a.get("post_diagonal", 0))
    return out


def _scan(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    r = c.reduction
    if r is None:
        raise NoReference("scan axis unknown")
    (axis,) = r.axes
    op = c.op or ""
    x = ops[0] * ops[1] if op.startswith("masked_") and len(ops) > 1 else ops[0]
    base = op.replace("reverse_", "").replace("masked_", "").replace("exclusive_", "")
    scans: dict[str, Callable[..., Any]] = {
        "cumsum": np.cumsum, "cumprod": np.cumprod,
        "cummax": lambda v, axis: np.maximum.accumulate(v, axis=axis),
        "cummin": lambda v, axis: np.minimum.accumulate(v, axis=axis),
        "logcumsumexp": lambda v, axis: np.logaddexp.accumulate(v, axis=axis)}
    fn = scans.get(base)
    if fn is None:
        raise NoReference(f"no reference for scan '{op}'")
    if op.startswith("reverse_"):
        return np.flip(fn(np.flip(x, axis), axis=axis), axis)
    if op.startswith("exclusive_"):  # a zero slice before x along the axis; [:-1] then trims axis 0
        if c.op_args.get("narrow"):  # x without its last position along the axis
            x = np.take(x, np.arange(x.shape[axis] - 1), axis=axis)
        y = np.concatenate([np.zeros_like(np.take(x, [0], axis=axis)), x], axis=axis)
        return fn(y[:-1] if c.op_args.get("trim_last_row") else y, axis=axis)
    return fn(x, axis=axis)


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    if isinstance(v, dict):
        return {k: _thaw(x) for k, x in v.items()}
    return v


def _attention(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    if c.op != "scaled_dot_product_attention" or len(ops) < 3:
        raise NoReference(f"no reference for attention '{c.op}'")
    q, k, v = ops[:3]
    scale = c.op_args.get("scale")
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.matmul(e / e.sum(axis=-1, keepdims=True), v)


_FAMILIES: dict[str, Callable[[Contract, list[np.ndarray], dict[str, Any]], np.ndarray]] = {
    "elementwise": _elementwise, "softmax": _softmax, "reduction": _reduction, "norm": _norm,
    "loss": _loss, "matmul": _matmul, "scan": _scan, "attention": _attention,
}
