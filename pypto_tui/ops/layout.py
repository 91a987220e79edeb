"""Operators that move data without arithmetic but are not views: concatenation, transposes and
permutations (a kernel must copy for them)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from pypto_tui.ops.base import REQUIRED, Decomposition, OpError, OpKind, Shape, ShapeOf, axis, part


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


def _far_swap(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """transpose(d0, d1) of axes that are not neighbours, as the permutation it is (_permute_swaps)."""
    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None or len(shape) < 2:
        return None
    d0, d1 = sorted((axis(n.attrs.get("dim0", -2), len(shape)), axis(n.attrs.get("dim1", -1), len(shape))))
    if d1 - d0 <= 1:
        return None
    dims = list(range(len(shape)))
    dims[d0], dims[d1] = dims[d1], dims[d0]
    return _permute_swaps(replace(n, attrs={"dims": tuple(dims)}), shape_of)


def _permute_swaps(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """A permutation that is no single swap, as swaps of neighbouring axes (a bubble sort of the axes):
    each a transpose kernel of its own (TRANSPOSE.block-copy, TRANSPOSE.last-axis). `x.permute(2, 0, 1)`
    of (B, C, L) is transpose(1, 2), then transpose(0, 1)."""
    shape = shape_of(n.inputs[0]) if n.inputs else None
    dims = n.attrs.get("dims")
    if shape is None or not isinstance(dims, tuple | list) or len(dims) != len(shape):
        return None
    want = [axis(d, len(shape)) for d in dims]
    if sorted(want) != list(range(len(shape))):
        return None
    merged = _merged_runs(n, shape, want)
    if merged is not None:
        return merged
    swaps = _bubble(want)
    if len(swaps) < 2:
        return None  # no move, or one swap: the transpose reader takes it as it is
    return Decomposition(tuple(_swap_chain(n, n.inputs[0], shape, swaps)))


def _bubble(want: Sequence[int]) -> list[int]:
    """The neighbouring swaps (the left axis of each) that bring the axes to the order `want`: each wanted
    axis brought to its place from the right."""
    order = list(range(len(want)))
    swaps: list[int] = []
    for target, axis_ in enumerate(want):
        at = order.index(axis_)
        while at > target:
            order[at - 1], order[at] = order[at], order[at - 1]
            swaps.append(at - 1)
            at -= 1
    return swaps


def _merged_runs(n: Any, shape: Shape, want: Sequence[int]) -> Decomposition | None:
    """A permutation that keeps runs of neighbouring axes together and in order moves the runs, not the
    axes: a free reshape merges each run into one axis, the fewer axes are swapped, and a free reshape
    splits them again. `permute(2, 0, 1)` of (H, W, C) is one transpose of (H*W, C) (TRANSPOSE.last-axis),
    where swapping axis by axis also moved rows of W elements, which are no whole 32-byte rows in
    general (Swin's relative-position bias, 49 of them). None when no two axes stay together."""
    from pypto_tui.ops.views import Step

    runs: list[list[int]] = []
    for a in want:
        if runs and runs[-1][-1] + 1 == a:
            runs[-1].append(a)
        else:
            runs.append([a])
    if len(runs) == len(want):
        return None
    by_source = sorted(runs, key=lambda r: r[0])
    merged_shape = tuple(math.prod(shape[a] for a in r) for r in by_source)
    merged_want = [by_source.index(r) for r in runs]
    swaps = _bubble(merged_want)
    out_shape = tuple(shape[a] for a in want)
    joined = part(n, "m", "view", "view", (n.inputs[0],), {"steps": (Step("reshape", shape=merged_shape),)},
                  merged_shape)
    chain = _swap_chain(n, joined.id, merged_shape, swaps)
    chain = [replace(t, id=f"{n.id}t{k}") if t.id == n.id else t for k, t in enumerate(chain)]
    last = chain[-1].id if chain else joined.id
    split = part(n, "", "view", "view", (last,), {"steps": (Step("reshape", shape=out_shape),)}, out_shape)
    return Decomposition((joined, *chain, split))


def _swap_chain(n: Any, src: str, shape: Shape, swaps: Sequence[int]) -> list[Any]:
    """The transpose nodes that swap axes d and d + 1 for each d of `swaps` in turn, from the value `src`
    of `shape`; the last keeps the node's id (its readers are unchanged)."""
    parts: list[Any] = []
    cur = list(shape)
    for k, d in enumerate(swaps):
        cur[d], cur[d + 1] = cur[d + 1], cur[d]
        last = k == len(swaps) - 1
        t = part(n, "" if last else f"t{k}", "transpose", "layout", (src,), {"dim0": d, "dim1": d + 1}, tuple(cur))
        parts.append(t)
        src = t.id
    return parts


BASE_KINDS = (
    OpKind("cat", "layout", _cat_shape, lambda *xs, dim=0, **_: np.concatenate(xs, axis=dim),
           functions=("cat", "concat", "concatenate"), params=("dim",), arity=-1, aten=("aten.cat.default",),
           inputs=("tensors",), defaults={"dim": 0}, pattern="cat",
           formula="out = cat(({parts}), dim={dim})  (each part copied to its offset along axis {dim}, {shape})",
           direction="the parts land along axis {dim} in the order {parts}"),
    OpKind("transpose", "layout", _transpose_shape, _transpose, functions=("transpose", "t"),
           methods=("transpose", "t"), params=("dim0", "dim1"), aten=("aten.transpose.int", "aten.t.default"),
           decompose=_far_swap, spelled=("method", "positional"),
           formula="out = {x}.transpose({dim0}, {dim1})  (axes {dim0} and {dim1} swapped, {shape})"),
    OpKind("permute", "layout", _permute_shape, lambda x, dims=(), **_: np.transpose(x, dims),
           functions=("permute",), methods=("permute",), params=("dims",), aten=("aten.permute.default",),
           decompose=_permute_swaps, spelled=("method", "spread")),
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


def _unfold_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    d = axis(attrs.get("dimension", 0), len(x))
    size, step = int(attrs.get("size", 1)), int(attrs.get("step", 1))
    if size < 1 or step < 1 or size > x[d]:
        raise OpError(f"unfold({d}, {size}, {step}) of {x}")
    return (*x[:d], (x[d] - size) // step + 1, *x[d + 1:], size)


def _unfold(x: np.ndarray, dimension: int = 0, size: int = 1, step: int = 1, **_: Any) -> np.ndarray:
    d = axis(dimension, x.ndim)
    windows = np.lib.stride_tricks.sliding_window_view(x, size, axis=d)
    return np.ascontiguousarray(np.take(windows, range(0, x.shape[d] - size + 1, step), axis=d))


def _unfold_patches(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """x.unfold(d, p, p), windows that tile the axis (a vision transformer's patches): a free reshape
    of axis d into (D / p, p), then the p axis moved to the end by neighbouring swaps (transpose
    kernels, TRANSPOSE.block-copy / TRANSPOSE.last-axis). Overlapping windows stay whole (no kernel)."""
    from pypto_tui.ops.views import Step

    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None:
        return None
    d = axis(n.attrs.get("dimension", 0), len(shape))
    size, step = int(n.attrs.get("size", 1)), int(n.attrs.get("step", 1))
    if size != step or shape[d] % size:
        return None
    cur = [*shape[:d], shape[d] // size, size, *shape[d + 1:]]
    swaps = list(range(d + 1, len(cur) - 1))
    split = {"steps": (Step("reshape", shape=tuple(cur)),)}
    view = part(n, "v" if swaps else "", "view", "view", (n.inputs[0],), split, tuple(cur))
    return Decomposition((view, *_swap_chain(n, view.id, tuple(cur), swaps)))


def pad_widths(rank: int, d: int, before: int, after: int) -> tuple[int, ...]:
    """torch's pad list that widens axis d of a rank-`rank` tensor alone (the inverse of `pad_pairs` for
    one axis): the last axis's pair first, so axis d's pair ends the list."""
    widths = [0] * (2 * (rank - d % rank))
    widths[-2:] = [before, after]
    return tuple(widths)


def pad_pairs(pad: Any, rank: int) -> list[tuple[int, int]]:
    """torch's pad list (the last axis's before and after first, then the axis before it, ...) as one
    (before, after) pair per axis of a rank-`rank` tensor; OpError when it is not such a list."""
    if not isinstance(pad, tuple | list) or len(pad) % 2 or len(pad) > 2 * rank or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in pad):
        raise OpError(f"pad={pad!r} is not a list of before/after ints, two per padded axis (at most {rank} axes)")
    pairs = [(0, 0)] * rank
    for k in range(len(pad) // 2):
        pairs[rank - 1 - k] = (int(pad[2 * k]), int(pad[2 * k + 1]))
    return pairs


def _pad_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    if attrs.get("mode", "constant") != "constant":
        raise OpError(f"pad mode {attrs.get('mode')!r}: only 'constant' is a copy with a fill")
    out = tuple(s + lo + hi for s, (lo, hi) in zip(x, pad_pairs(attrs.get("pad"), len(x)), strict=True))
    if any(s < 1 for s in out):
        raise OpError(f"pad {tuple(attrs.get('pad') or ())} of {x} leaves an empty axis")
    return out


def _pad(x: np.ndarray, pad: Sequence[int] = (), value: float = 0.0, **_: Any) -> np.ndarray:
    pairs = pad_pairs(list(pad), x.ndim)
    crop = tuple(slice(max(0, -lo), x.shape[i] - max(0, -hi)) for i, (lo, hi) in enumerate(pairs))
    widths = [(max(0, lo), max(0, hi)) for lo, hi in pairs]
    return np.pad(x[crop], widths, mode="constant", constant_values=value)


def _pad_axes(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """A constant pad of several axes, or one that crops (a negative width), as one node per axis: each
    crop a narrow (SLICE.rows-copy), each pad of one axis a pad kernel of its own (PAD.rows-copy). A pad
    of one axis by non-negative widths stays whole."""
    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None or n.attrs.get("mode", "constant") != "constant":
        return None
    pairs = pad_pairs(n.attrs.get("pad"), len(shape))
    touched = [d for d, pr in enumerate(pairs) if pr != (0, 0)]
    if len(touched) <= 1 and all(lo >= 0 and hi >= 0 for lo, hi in pairs):
        return None
    parts: list[Any] = []
    src, cur = n.inputs[0], list(shape)
    steps: list[tuple[str, int, int, int]] = []
    for d in reversed(touched):  # the last axis first, as torch lists them
        lo, hi = pairs[d]
        if lo < 0 or hi < 0:
            steps.append(("narrow", d, max(0, -lo), cur[d] - max(0, -lo) - max(0, -hi)))
        if lo > 0 or hi > 0:
            steps.append(("pad", d, max(0, lo), max(0, hi)))
    for k, (op, d, a, b) in enumerate(steps):
        last = k == len(steps) - 1
        if op == "narrow":
            cur[d] = b
            attrs: dict[str, Any] = {"dim": d, "start": a, "length": b}
        else:
            cur[d] += a + b
            attrs = {"pad": pad_widths(len(shape), d, a, b), "value": n.attrs.get("value", 0.0)}
        node = part(n, "" if last else f"p{k}", op, "layout", (src,), attrs, tuple(cur))
        parts.append(node)
        src = node.id
    return Decomposition(tuple(parts))


def per_axis(v: Any) -> tuple[int, ...]:
    """A roll's shifts or dims, one entry per axis (`3` is one axis, two equal shifts stay two)."""
    items = tuple(v) if isinstance(v, list | tuple) else (() if v is None else (v,))
    return tuple(int(x) for x in items)


def _axes_shifts(attrs: Mapping[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    return per_axis(attrs.get("shifts", ())), per_axis(attrs.get("dims", ()))


def _roll_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    shifts, dims = _axes_shifts(attrs)
    if not dims or len(shifts) != len(dims):
        raise OpError(f"roll by {shifts} over dims {dims}: name one axis per shift (a roll of the flattened "
                      "tensor is not read)")
    return tuple(shapes[0])


def _roll(x: np.ndarray, shifts: Any = (), dims: Any = (), **_: Any) -> np.ndarray:
    s, d = _axes_shifts({"shifts": shifts, "dims": dims})
    return np.roll(x, s, d)


def _roll_halves(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """torch.roll along each named axis as the two blocks that trade places (a cyclic shift by s puts the
    last s positions first): two narrow copies (SLICE.rows-copy) and their concatenation (CAT.rows-copy)."""
    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None:
        return None
    shifts, dims = _axes_shifts(n.attrs)
    steps = [(d % len(shape), s % shape[d % len(shape)]) for s, d in zip(shifts, dims, strict=False)]
    steps = [(d, s) for d, s in steps if s]
    if not steps:  # a roll by whole turns: a copy
        return Decomposition((part(n, "", "narrow", "layout", n.inputs[:1], {"dim": 0, "start": 0,
                                                                             "length": shape[0]}, shape),))
    parts: list[Any] = []
    src = n.inputs[0]
    for k, (d, s) in enumerate(steps):
        size = shape[d]
        tail = part(n, f"r{k}t", "narrow", "layout", (src,), {"dim": d, "start": size - s, "length": s},
                    (*shape[:d], s, *shape[d + 1:]))
        head = part(n, f"r{k}h", "narrow", "layout", (src,), {"dim": d, "start": 0, "length": size - s},
                    (*shape[:d], size - s, *shape[d + 1:]))
        joined = part(n, "" if k == len(steps) - 1 else f"r{k}", "cat", "layout", (tail.id, head.id), {"dim": d},
                      tuple(shape))
        parts += [tail, head, joined]
        src = joined.id
    return Decomposition(tuple(parts))


SLICE_KINDS = (
    # What a narrow or select view becomes when a kernel has to read its result (views.COPIED_STEPS):
    # no spelling of its own, the graph makes it from a view.
    OpKind("narrow", "layout", _narrow_shape, _narrow, params=("dim", "start", "length"), pattern="slice",
           spelled=("torch", "keywords"),
           formula="out = {x}.narrow({dim}, {start}, {length})  ({length} positions from {start} of axis {dim} "
                   "copied out, {shape})",
           note="part of one axis copied out: x.narrow(dim, start, length) made contiguous"),
    OpKind("unfold", "layout", _unfold_shape, _unfold, methods=("unfold",), params=("dimension", "size", "step"),
           aten=("aten.unfold.default",), decompose=_unfold_patches,
           note="windows of one axis, laid along a new last axis; patches (step == size) are a reshape and swaps"),
    OpKind("roll", "layout", _roll_shape, _roll, functions=("roll",), methods=("roll",), params=("shifts", "dims"),
           aten=("aten.roll.default",), decompose=_roll_halves,
           note="torch.roll(x, shifts, dims): a cyclic shift, per axis the last s positions moved first"),
    OpKind("pad", "layout", _pad_shape, _pad, functions=("pad",), params=("pad", "mode", "value"),
           aten=("aten.constant_pad_nd.default",), defaults={"mode": "constant", "value": 0.0}, pattern="pad",
           decompose=_pad_axes, spelled=("F", "keywords"),
           formula="out = F.pad({x}, {pad}, value={value})  (borders of {value} around {x}, {shape})",
           note="F.pad(x, pad, value=v): each axis widened by a border of v (negative widths crop), one axis a kernel"),
)


def _gather_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    """torch.gather's result has the index's shape; the index has the input's rank and is no larger than it
    on every other axis."""
    x, index = tuple(shapes[0]), tuple(shapes[1])
    a = axis(attrs.get("dim", 0), len(x))
    if len(index) != len(x):
        raise OpError(f"gather's index has rank {len(index)}, its input rank {len(x)}: torch needs the same rank")
    if any(i > s for d, (i, s) in enumerate(zip(index, x, strict=True)) if d != a):
        raise OpError(f"gather's index {index} is larger than its input {x} on an axis other than {a}")
    return index


def _gather(x: np.ndarray, index: np.ndarray, dim: int = 0, **_: Any) -> np.ndarray:
    a = axis(dim, x.ndim)
    return np.take_along_axis(x[tuple(slice(0, s) if d != a else slice(None) for d, s in enumerate(index.shape))],
                              index.astype(np.int64), axis=a)


def _module_table(attrs: Mapping[str, Any]) -> Shape:
    """nn.Embedding's table, (num_embeddings, embedding_dim), from the module's arguments."""
    n, d = attrs.get("num_embeddings"), attrs.get("embedding_dim")
    if not isinstance(n, int) or not isinstance(d, int):
        raise OpError("nn.Embedding's num_embeddings and embedding_dim must be constants")
    return (n, d)


def _embedding_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    """Each position of the index picks a row of the table: the index's shape, then the row's."""
    index = tuple(shapes[0])
    table = tuple(shapes[1]) if len(shapes) > 1 else _module_table(attrs)
    if len(table) < 2:
        raise OpError(f"an embedding table has rows: {table} has rank {len(table)}")
    return (*index, *table[1:])


def _embedding(index: np.ndarray, table: np.ndarray, **_: Any) -> np.ndarray:
    return np.asarray(table[index.astype(np.int64)])


def _embedding_weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
    table = _module_table(attrs)
    if attrs.get("max_norm") is not None:
        raise OpError("nn.Embedding with max_norm renormalises its table in place on every call: no kernel "
                      "writes that; drop max_norm")
    return {"weight": table}


MORE_KINDS = (
    OpKind("embedding", "layout", _embedding_shape, _embedding, functions=("embedding",), modules=("Embedding",),
           params=("weight", "padding_idx", "max_norm"), aten=("aten.embedding.default", "aten.index.Tensor"),
           pattern="take_rows", weights=_embedding_weights, index_inputs=(0,), positions_along=(1, 0),
           module_signature=(("num_embeddings", REQUIRED), ("embedding_dim", REQUIRED), ("padding_idx", None),
                             ("max_norm", None)),
           defaults={"padding_idx": None, "max_norm": None},
           formula="out = {y}[{x}]  (row {x}[i] of {y} at each position i of the index, {shape})",
           direction="{y} holds the rows, {x} which row goes where", inputs=("input",),
           refuses=(("max_norm", "embedding with max_norm renormalises its table in place on every call: "
                                  "drop max_norm"),),
           note="F.embedding(index, table) / nn.Embedding / table[index]: each position of the integer index "
                "picks a row of the table (TAKE.index-select)"),
    OpKind("gather", "layout", _gather_shape, _gather, functions=("gather",), methods=("gather",),
           params=("dim", "index"), arity=2, aten=("aten.gather.default",), pattern="gather", index_inputs=(1,),
           formula="out = gather({x}, {dim}, {y})  (the values of {x} at {y}'s positions along axis {dim}, "
                   "{shape})",
           direction="{x} holds the values, {y} their positions",
           note="torch.gather(x, dim, index): the values of x at the index's positions along dim (GATHER.take-along)"),
    OpKind("flip", "layout", _same, lambda x, dims=(), **_: np.flip(x, dims), functions=("flip",),
           methods=("flip",), params=("dims",), aten=("aten.flip.default",)),
    OpKind("triu", "layout", _same, lambda x, diagonal=0, **_: np.triu(x, diagonal), functions=("triu",),
           methods=("triu",), params=("diagonal",), aten=("aten.triu.default",)),
    OpKind("tril", "layout", _same, lambda x, diagonal=0, **_: np.tril(x, diagonal), functions=("tril",),
           methods=("tril",), params=("diagonal",), aten=("aten.tril.default",)),
)
KINDS = BASE_KINDS + SLICE_KINDS + MORE_KINDS
