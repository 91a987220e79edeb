"""Operators that move data without arithmetic but are not views: concatenation, transposes and
permutations (a kernel must copy for them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pypto_tui.ops.base import OpError, OpKind, Shape, axis


def _cat_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    first = tuple(shapes[0])
    d = axis(attrs.get("dim", 0), len(first))
    for s in shapes[1:]:
        if len(s) != len(first) or any(a != b for i, (a, b) in enumerate(zip(s, first, strict=True)) if i != d):
            raise OpError(f"cat along {d}: {tuple(s)} does not match {first}")
    return (*first[:d], sum(s[d] for s in shapes), *first[d + 1:])


def _transpose_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = list(shapes[0])
    if len(x) < 2 and attrs.get("dim0") is None:
        return tuple(x)
    d0 = axis(attrs.get("dim0", -2), len(x))
    d1 = axis(attrs.get("dim1", -1), len(x))
    x[d0], x[d1] = x[d1], x[d0]
    return tuple(x)


def _permute_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    dims = attrs.get("dims")
    if not isinstance(dims, tuple | list) or sorted(axis(d, len(x)) for d in dims) != list(range(len(x))):
        raise OpError(f"permute({dims}) of a rank-{len(x)} tensor")
    return tuple(x[axis(d, len(x))] for d in dims)


def _transpose(x: np.ndarray, dim0: int = -2, dim1: int = -1, **_: Any) -> np.ndarray:
    return np.swapaxes(x, dim0, dim1)


BASE_KINDS = (
    OpKind("cat", "layout", _cat_shape, lambda *xs, dim=0, **_: np.concatenate(xs, axis=dim),
           functions=("cat", "concat", "concatenate"), params=("dim",), arity=-1, aten=("aten.cat.default",),
           inputs=("tensors",), defaults={"dim": 0}, pattern="cat"),
    OpKind("transpose", "layout", _transpose_shape, _transpose, functions=("transpose", "t"),
           methods=("transpose", "t"), params=("dim0", "dim1"), aten=("aten.transpose.int", "aten.t.default")),
    OpKind("permute", "layout", _permute_shape, lambda x, dims=(), **_: np.transpose(x, dims),
           functions=("permute",), methods=("permute",), params=("dims",), aten=("aten.permute.default",)),
)


def _same(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return tuple(shapes[0])


def _narrow_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    d = axis(attrs.get("dim", 0), len(x))
    start, length = int(attrs.get("start", 0)), int(attrs.get("length", 0))
    if start < 0 or length < 1 or start + length > x[d]:
        raise OpError(f"narrow({d}, {start}, {length}) is outside {x}")
    return (*x[:d], length, *x[d + 1:])


def _narrow(x: np.ndarray, dim: int = 0, start: int = 0, length: int = 0, **_: Any) -> np.ndarray:
    return np.ascontiguousarray(np.take(x, range(start, start + length), axis=dim))


SLICE_KINDS = (
    # What a narrow or select view becomes when a kernel has to read its result (views.COPIED_STEPS):
    # no spelling of its own, the graph makes it from a view.
    OpKind("narrow", "layout", _narrow_shape, _narrow, params=("dim", "start", "length"), pattern="slice",
           note="part of one axis copied out: x.narrow(dim, start, length) made contiguous"),
)


MORE_KINDS = (
    OpKind("flip", "layout", _same, lambda x, dims=(), **_: np.flip(x, dims), functions=("flip",),
           methods=("flip",), params=("dims",), aten=("aten.flip.default",)),
    OpKind("triu", "layout", _same, lambda x, diagonal=0, **_: np.triu(x, diagonal), functions=("triu",),
           methods=("triu",), params=("diagonal",), aten=("aten.triu.default",)),
    OpKind("tril", "layout", _same, lambda x, diagonal=0, **_: np.tril(x, diagonal), functions=("tril",),
           methods=("tril",), params=("diagonal",), aten=("aten.tril.default",)),
)
KINDS = BASE_KINDS + SLICE_KINDS + MORE_KINDS
