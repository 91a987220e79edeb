"""The contract's own reference in numpy: what the contract *says* the task computes.

It is built only from the contract's fields (family, op, op_args, axes, scaling), never from
the task file's code, so comparing it with the real baseline (`self_check`) tests the contract,
not the parser. Everything is computed in float64; the caller chooses the tolerance.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pypto_tui.contract import ir, views
from pypto_tui.contract.model import Contract
from pypto_tui.contract.signatures import FUNC_DEFAULTS, FUNC_SIGS, bind
from pypto_tui.ops import elementwise as ops_elementwise
from pypto_tui.ops import registry
from pypto_tui.ops import views as ops_views
from pypto_tui.ops.base import OpError, OpKind
from pypto_tui.ops.loss import reduce_loss


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
        value: np.ndarray = eval_expr(ir.from_data(_thaw(a["expr"])), env)
        return value
    if op in UNARY:
        params = {k: v for k, v in a.items() if k not in ("operands",) and v is not None}
        return UNARY[op](x, **params)
    if op in BINARY:
        if a.get("scalar_input") or a.get("scalar") is not None:
            s = env.get(a["scalar_input"]) if a.get("scalar_input") else a.get("scalar")
            with_scalar: np.ndarray = BINARY[op](x, s) if a.get("scalar_side", "right") == "right" else BINARY[op](s, x)
            return with_scalar
        if len(ops) < 2:
            raise NoReference(f"{op} needs two operands")
        both: np.ndarray = BINARY[op](ops[0], ops[1])
        return both
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


def _kind(c: Contract) -> OpKind:
    """The registry's entry for the contract's op: its numpy reference is the one reference of the kind."""
    k = registry.of_contract(c.op or (c.reduction.op if c.reduction is not None else None))
    if k is None or k.reference is None:
        raise NoReference(f"no reference for {c.family} '{c.op}'")
    return k


def _attrs(c: Contract, **more: Any) -> dict[str, Any]:
    """The contract's op_args as the kind's attributes (None, torch's default, left to the kind), with
    `more` (the contract's derived axes) over them."""
    return {**{k: v for k, v in c.op_args.items() if v is not None and k != "operands"}, **more}


def _run(k: OpKind, *arrays: Any, **attrs: Any) -> np.ndarray:
    assert k.reference is not None
    try:
        return np.asarray(k.reference(*arrays, **attrs))
    except OpError as exc:
        raise NoReference(f"{k.name}: {exc}") from None


def _operands(c: Contract, k: OpKind, ops: list[np.ndarray]) -> list[np.ndarray]:
    n = k.arity if k.arity > 0 else len(ops)
    if len(ops) < n:
        raise NoReference(f"{c.op} needs {n} operands")
    return ops[:n]


def _softmax(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    if c.reduction is None:
        raise NoReference("softmax without its axis")
    (axis,) = c.reduction.axes
    return _run(_kind(c), ops[0], dim=axis)


def _reduction(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    r = c.reduction
    if r is None:
        raise NoReference("reduction contract unknown")
    x = ops[0]
    if c.op_args.get("operand_expr") is not None:
        x = eval_expr(ir.from_data(_thaw(c.op_args["operand_expr"])), env)
    # no dim: every axis (an arg-reduction then indexes the flattened tensor)
    dim = tuple(r.axes) if c.op_args.get("dim") is not None else None
    return _run(_kind(c), x, **_attrs(c, dim=dim, keepdim=r.keepdim))


def _norm(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    r = c.reduction
    if r is None:
        raise NoReference(f"no reference for norm '{c.op}' without its axes")
    # the axes the contract derived name the written-out forms' statistics; eps None is the input
    # dtype's machine epsilon where torch defaults to it (RMSNorm)
    return _run(_kind(c), ops[0], **_attrs(c, dim=tuple(r.axes), keepdim=r.keepdim, dtype=_input_dtype(c)))


def _input_dtype(c: Contract) -> Any:
    d = c.tensor_inputs[0].dtype if c.tensor_inputs else "fp32"
    return {"fp16": np.float16, "bf16": np.float32, "fp64": np.float64}.get(d or "fp32", np.float32)


def _legacy_dim(x: np.ndarray) -> int:
    """torch's implicit softmax dim (deprecated): 0 for rank 0, 1 and 3, else 1."""
    return 0 if x.ndim in (0, 1, 3) else 1


def _loss(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    k = _kind(c)
    arrays = _operands(c, k, ops)
    a = _attrs(c)
    tf = a.pop("input_transform", None)
    if tf is not None:  # kl_div(log(p), t): the input's transform is a kind of its own, applied first
        t = registry.kind(tf)
        if t is None or t.reference is None:
            raise NoReference(f"{c.op} input transform '{tf}'")
        dim = c.op_args.get("transform_dim", -1)
        extra = {"dim": _legacy_dim(arrays[0]) if dim is None else dim} if "dim" in t.params else {}
        arrays = [_run(t, arrays[0], **extra), *arrays[1:]]
    out = _run(k, *arrays, **a)
    if "reduction" not in k.params and a.get("reduction") in ("mean", "sum"):
        # a similarity averaged as a loss: mean(offset - cos), the contract's composition
        return reduce_loss(a.get("offset", 1) - out, a["reduction"])
    return out


def _matmul(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    k = _kind(c)
    if k.weights is not None:
        raise NoReference(f"{c.op} has learned weights, not contract inputs")
    a = c.op_args
    A, B = _operands(c, k, ops)
    if a.get("transpose_a"):
        A = np.swapaxes(A, -1, -2)
    if a.get("transpose_b"):
        B = np.swapaxes(B, -1, -2)
    out = _run(k, A, B, **_attrs(c))
    post = a.get("post")
    if post:  # the product masked by a layout kind (tril / triu) with its diagonal
        p = registry.kind(post)
        if p is None or p.reference is None:
            raise NoReference(f"{c.op} followed by '{post}'")
        out = _run(p, out, diagonal=a.get("post_diagonal", 0))
    return out


_SCAN_FORMS = ("reverse_", "masked_", "exclusive_")
"""The prefixes the contract's scan ops carry: the form around the scan kind (a composition, not a kind)."""


def _scan(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    r = c.reduction
    if r is None:
        raise NoReference("scan axis unknown")
    (axis,) = r.axes
    op = c.op or ""
    form = next((f for f in _SCAN_FORMS if op.startswith(f)), "")
    k = registry.kind(op[len(form):])
    if k is None or k.reference is None or k.role != "scan":
        raise NoReference(f"no reference for scan '{op}'")

    def fn(v: np.ndarray) -> np.ndarray:
        return _run(k, v, dim=axis)

    x = ops[0] * ops[1] if form == "masked_" and len(ops) > 1 else ops[0]
    if form == "reverse_":
        return np.flip(fn(np.flip(x, axis)), axis)
    if form == "exclusive_":  # a zero slice before x along the axis; [:-1] then trims axis 0
        if c.op_args.get("narrow"):  # x without its last position along the axis
            x = np.take(x, np.arange(x.shape[axis] - 1), axis=axis)
        y = np.concatenate([np.zeros_like(np.take(x, [0], axis=axis)), x], axis=axis)
        return fn(y[:-1] if c.op_args.get("trim_last_row") else y)
    return fn(x)


def _thaw(v: Any) -> Any:
    if isinstance(v, tuple):
        return [_thaw(x) for x in v]
    if isinstance(v, dict):
        return {k: _thaw(x) for k, x in v.items()}
    return v


def _by_kind(c: Contract, ops: list[np.ndarray], env: dict[str, Any]) -> np.ndarray:
    """The registry entry's own reference on the operands (attention, a concatenation)."""
    k = _kind(c)
    return _run(k, *_operands(c, k, ops), **_attrs(c))


_FAMILIES: dict[str, Callable[[Contract, list[np.ndarray], dict[str, Any]], np.ndarray]] = {
    "elementwise": _elementwise, "softmax": _softmax, "reduction": _reduction, "norm": _norm,
    "loss": _loss, "matmul": _matmul, "scan": _scan, "attention": _by_kind, "layout": _by_kind,
    "recurrent": _by_kind,
}
