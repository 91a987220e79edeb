"""Matrix products: `nn.Linear` / `F.linear` (x @ W.T + b) and `@` / matmul / mm / bmm.

The anchor of most level-2 chains: a pattern writes it on the cube and may take an elementwise
epilogue on its output (which kinds: the pack's fusion rules).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import REQUIRED, Decomposition, OpError, OpKind, Shape, ShapeOf, part


def _linear_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x, w = shapes[0], shapes[1]
    if len(w) != 2 or not x or x[-1] != w[1]:
        raise OpError(f"linear: input {x} does not match weight {w} (its last axis must be {w[-1] if w else '?'})")
    if len(shapes) > 2 and tuple(shapes[2]) not in ((w[0],), ()):
        raise OpError(f"linear: bias {shapes[2]} is not ({w[0]},)")
    return (*x[:-1], w[0])


def _linear_ref(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None, **_: Any) -> np.ndarray:
    y = x @ w.T
    return np.asarray(y + b if b is not None else y)


def _matmul_ref(a: np.ndarray, b: np.ndarray, **_: Any) -> np.ndarray:
    return np.asarray(np.matmul(a, b))


def _diag_matmul_ref(a: np.ndarray, b: np.ndarray, diag_a: bool = True, diag_b: bool = False,
                     **_: Any) -> np.ndarray:
    """diag(a) @ b as a row scaling (a the diagonal's vector), or a @ diag(b) as a column scaling."""
    return np.asarray(a * b[None, :] if diag_b and not diag_a else a[:, None] * b)


def _diag_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    """The matrix operand's shape (the other operand is the diagonal's vector)."""
    return tuple(shapes[1] if attrs.get("diag_a", True) and not attrs.get("diag_b") else shapes[0])


def _sdpa_ref(q: np.ndarray, k: np.ndarray, v: np.ndarray, attn_mask: Any = None, dropout_p: float = 0.0,
              is_causal: bool = False, scale: float | None = None, **_: Any) -> np.ndarray:
    """softmax(q @ k^T * scale (1/sqrt(E) by default), over the last axis) @ v, with the causal mask or a
    boolean / additive mask array (dropout is not modelled: a reference is deterministic)."""
    s = np.matmul(q, np.swapaxes(k, -1, -2)) * (scale if scale is not None else 1.0 / math.sqrt(q.shape[-1]))
    if is_causal:
        lq, lk = s.shape[-2], s.shape[-1]
        s = np.where(np.tril(np.ones((lq, lk), dtype=bool)), s, -np.inf)
    if isinstance(attn_mask, np.ndarray):
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == bool else s + attn_mask
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.asarray(np.matmul(e / e.sum(axis=-1, keepdims=True), v))


def _linear_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    i, o = attrs.get("in_features"), attrs.get("out_features")
    if not isinstance(i, int) or not isinstance(o, int):
        raise OpError("nn.Linear's in_features and out_features must be constants")
    out: dict[str, Shape] = {"weight": (o, i)}
    if attrs.get("bias", True):
        out["bias"] = (o,)
    return out


def _matmul_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    a, b = tuple(shapes[0]), tuple(shapes[1])
    if not a or not b:
        raise OpError("matmul of a 0-d tensor")
    try:
        return _matmul_shape_formula(a, b)
    except (ValueError, OpError) as exc:
        raise OpError(f"matmul: {a} @ {b} ({exc})") from None


def _matmul_shape_formula(a: Shape, b: Shape) -> Shape:
    """torch.matmul's shape rule, without allocating."""
    va, vb = len(a) == 1, len(b) == 1
    a2 = (1, *a) if va else a
    b2 = (*b, 1) if vb else b
    if a2[-1] != b2[-2]:
        raise ValueError(f"inner sizes {a2[-1]} and {b2[-2]} differ")
    from pypto_tui.ops.base import broadcast

    batch = broadcast([a2[:-2], b2[:-2]])
    out = (*batch, a2[-2], b2[-1])
    if va:
        out = (*out[:-2], out[-1])
    if vb:
        out = out[:-1]
    return out


def _bmm_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    a, b = shapes[0], shapes[1]
    if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1]:
        raise OpError(f"bmm: {tuple(a)} and {tuple(b)} are not (B, M, K) and (B, K, N)")
    return (a[0], a[1], b[2])


def _einsum_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    eq = str(attrs.get("equation", "")).replace(" ", "")
    if "->" not in eq or "." in eq:
        raise OpError(f"einsum equation {eq!r}: only explicit outputs without '...' are read")
    lhs, out = eq.split("->")
    sizes: dict[str, int] = {}
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise OpError(f"einsum {eq!r} takes {len(terms)} operands, got {len(shapes)}")
    for term, shape in zip(terms, shapes, strict=True):
        if len(term) != len(shape):
            raise OpError(f"einsum term {term!r} does not match {tuple(shape)}")
        for ch, n in zip(term, shape, strict=True):
            if sizes.setdefault(ch, n) != n and n != 1:
                raise OpError(f"einsum index {ch!r} is {sizes[ch]} and {n}")
    return tuple(sizes[ch] for ch in out)


def _sdpa_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    q, v = tuple(shapes[0]), tuple(shapes[2])
    return (*q[:-1], v[-1])


def _linear_bias(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """A biased linear as the product and an `add` of the bias: the product is the anchor, the bias an
    elementwise op the fusion rules place like any other."""
    if len(n.inputs) != 3:
        return None
    product = part(n, "m", n.op, n.role, n.inputs[:2], {**n.attrs, "bias": False}, n.shape)
    add = replace(part(n, "", "add", "elementwise", (product.id, n.inputs[2]), {}, n.shape),
                  spelling=f"{n.spelling} bias")
    return Decomposition((product, add))


KINDS = (
    OpKind("einsum", "matmul", _einsum_shape, None, params=("equation",), arity=-1, pattern="B",
           note="read through its equation (attrs['equation'])"),
    OpKind("scaled_dot_product_attention", "attention", _sdpa_shape, _sdpa_ref,
           functions=("scaled_dot_product_attention",), params=("attn_mask", "dropout_p", "is_causal", "scale"),
           inputs=("query", "key", "value"),
           arity=3, pattern="attention", aten=("aten.scaled_dot_product_attention.default",)),
    OpKind("linear", "matmul", _linear_shape, _linear_ref, functions=("linear",), modules=("Linear",),
           params=("weight", "bias"), arity=1, pattern="B", weights=_linear_weights, decompose=_linear_bias,
           aten=("aten.linear.default",),
           module_signature=(("in_features", REQUIRED), ("out_features", REQUIRED), ("bias", True)),
           note="y = x @ W.T + b; the module's weight (out, in) and bias (out,) are its parameters"),
    OpKind("matmul", "matmul", _matmul_shape, _matmul_ref, functions=("matmul", "mm"), methods=("matmul", "mm"),
           arity=2, pattern="B", aten=("aten.mm.default", "aten.matmul.default", "aten.addmm.default")),
    OpKind("bmm", "matmul", _bmm_shape, _matmul_ref, functions=("bmm",), methods=("bmm",), arity=2, pattern="B",
           aten=("aten.bmm.default",)),
    # torch.diag(v) @ B (or A @ torch.diag(v)), read by the contract as a scaling by the vector: the graph
    # reader keeps diag and the product as they are written
    OpKind("diag_matmul", "matmul", _diag_shape, _diag_matmul_ref, params=("diag_a", "diag_b"), arity=2,
           pattern="diag"),
)
