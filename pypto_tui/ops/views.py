"""Views: operators that move no number, only choose and reshape (unsqueeze, view, reshape,
flatten, squeeze, expand, select, narrow, and indexing with ints, slices, None and `...`).

A chain of views over a task input is a *leaf* of an elementwise expression: the kernel reads
the leaf as one operand, laid out with size-1 axes where it broadcasts. Every view here is a
`Step` (kind, attributes) with its shape function, its numpy form and the torch method text a
generated `forward` uses to take the same view (all of them are views in torch: no copy until
the final reshape, and none computes a value).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pypto_tui.ops.base import Decomposition, OpError, OpKind, Shape, ShapeOf, axis, part


@dataclass(frozen=True)
class Step:
    """One view: kind is unsqueeze | reshape | expand | select | narrow."""

    kind: str
    dim: int = 0
    index: int = 0
    start: int = 0
    length: int = 0
    shape: Shape = ()

    def to_data(self) -> dict[str, Any]:
        d: dict[str, Any] = {"kind": self.kind}
        if self.kind in ("unsqueeze", "select", "narrow"):
            d["dim"] = self.dim
        if self.kind == "select":
            d["index"] = self.index
        if self.kind == "narrow":
            d.update(start=self.start, length=self.length)
        if self.kind in ("reshape", "expand"):
            d["shape"] = list(self.shape)
        return d


def step_of(data: Any) -> Step:
    """A Step from its `to_data` form (a graph read back from JSON), or the Step itself."""
    if isinstance(data, Step):
        return data
    d = dict(data)
    return Step(kind=str(d["kind"]), dim=int(d.get("dim", 0)), index=int(d.get("index", 0)),
                start=int(d.get("start", 0)), length=int(d.get("length", 0)),
                shape=tuple(int(x) for x in d.get("shape", ())))


def out_shape(step: Step, shape: Shape) -> Shape:
    """The shape after one view (the step's dims are already non-negative for `shape`)."""
    if step.kind == "unsqueeze":
        return (*shape[:step.dim], 1, *shape[step.dim:])
    if step.kind == "reshape":
        if math.prod(step.shape) != math.prod(shape):
            raise OpError(f"cannot view {shape} as {step.shape}")
        return step.shape
    if step.kind == "expand":
        if len(step.shape) < len(shape):
            raise OpError(f"cannot expand {shape} to {step.shape}")
        pad = (1,) * (len(step.shape) - len(shape)) + shape
        for s, t in zip(pad, step.shape, strict=True):
            if s != t and s != 1:
                raise OpError(f"cannot expand {shape} to {step.shape}")
        return step.shape
    if step.kind == "select":
        return (*shape[:step.dim], *shape[step.dim + 1:])
    if step.kind == "narrow":
        if step.start < 0 or step.length < 0 or step.start + step.length > shape[step.dim]:
            raise OpError(f"narrow({step.dim}, {step.start}, {step.length}) is outside {shape}")
        return (*shape[:step.dim], step.length, *shape[step.dim + 1:])
    raise OpError(f"unknown view '{step.kind}'")


def apply(step: Step, x: np.ndarray) -> np.ndarray:
    """The numpy form of one view."""
    if step.kind == "unsqueeze":
        return np.expand_dims(x, step.dim)
    if step.kind == "reshape":
        return x.reshape(step.shape)
    if step.kind == "expand":
        return np.broadcast_to(x, step.shape)
    if step.kind == "select":
        selected: np.ndarray = np.take(x, step.index, axis=step.dim)
        return selected
    if step.kind == "narrow":
        return np.take(x, np.arange(step.start, step.start + step.length), axis=step.dim)
    raise OpError(f"unknown view '{step.kind}'")


Size = int | tuple[int, ...]
"""One size of a reshape written for any input size: a literal, or the product of these axes of the
view's source tensor (`()` is a literal 1)."""


def symbolic_sizes(source: Shape, steps: Sequence[Step]) -> list[tuple[Size, ...] | None]:
    """For each reshape step of a chain of views of a tensor of shape `source`, its sizes in terms of
    the source's axes where the reshape merges or keeps them (a module then runs at any size the
    kernels take, such as verification's smaller ones); a size a reshape splits off stays a literal.
    None for the other steps (unsqueeze takes no sizes)."""
    cur: list[tuple[int, tuple[int, ...] | None]] = [(d, (i,)) for i, d in enumerate(source)]
    out: list[tuple[Size, ...] | None] = []
    for s in steps:
        if s.kind == "unsqueeze":
            cur.insert(s.dim, (1, ()))
            out.append(None)
        elif s.kind == "reshape":
            sizes, cur = _merged(cur, s.shape)
            out.append(sizes)
        else:
            shape = out_shape(s, tuple(d for d, _ in cur))
            cur = [(d, None) for d in shape]
            out.append(None)
    return out


Dims = list[tuple[int, tuple[int, ...] | None]]


def _split_one(cur: Dims, target: Shape) -> tuple[tuple[Size, ...], Dims]:
    """(sizes, the dims after) of a reshape that splits one axis and keeps the axes around it, as
    `(B, T, C) -> (B, T, heads, C // heads)`: the kept axes read from the source, the split-off sizes
    literals but the last, which is -1 (torch infers it), so the module runs at any size of that axis.
    All literals for any other reshape that splits."""
    literal: tuple[tuple[Size, ...], Dims] = (tuple(target), [(d, None) for d in target])
    head = 0
    while head < min(len(cur), len(target)) and cur[head][0] == target[head] and cur[head][1] is not None:
        head += 1
    tail = 0
    while (tail < min(len(cur), len(target)) - head and cur[-1 - tail][0] == target[-1 - tail]
           and cur[-1 - tail][1] is not None):
        tail += 1
    middle, parts = cur[head:len(cur) - tail], target[head:len(target) - tail]
    if len(middle) != 1 or middle[0][1] is None or len(parts) < 2 or math.prod(parts) != middle[0][0]:
        return literal
    keep_head = [a for d, a in cur[:head]]
    keep_tail = [a for d, a in cur[len(cur) - tail:]]
    sizes: list[Size] = [a or 1 for a in keep_head if a is not None]
    sizes += [*parts[:-1], -1]
    sizes += [a or 1 for a in keep_tail if a is not None]
    new: Dims = [*cur[:head], *((d, None) for d in parts), *cur[len(cur) - tail:]]
    return tuple(sizes), new


def _merged(cur: Dims, target: Shape) -> tuple[tuple[Size, ...], Dims]:
    """(sizes, the dims after) of one reshape: each target size a run of consecutive current dims whose
    product it is; a split of one axis between kept ones as `_split_one` writes it; else all literals."""
    literal = _split_one(cur, target)
    sizes: list[Size] = []
    new: list[tuple[int, tuple[int, ...] | None]] = []
    i = 0
    for t in target:
        if t == 1 and (i >= len(cur) or cur[i][0] != 1):  # an inserted unit axis
            sizes.append(1)
            new.append((1, ()))
            continue
        prod, known = 1, True
        axes: list[int] = []
        while i < len(cur) and (prod < t or (t == 1 and not axes and prod == 1)):
            d, ax = cur[i]
            prod *= d
            known = known and ax is not None
            axes += ax or ()
            i += 1
            if t == 1:
                break
        if prod != t:
            return literal
        group = tuple(axes) if known else None
        sizes.append(t if group is None else (group if group else 1))
        new.append((t, group))
    while i < len(cur) and cur[i][0] == 1:
        i += 1
    return literal if i != len(cur) else (tuple(sizes), new)


def torch_text(step: Step) -> str:
    """The method call a generated forward writes for one view (never for `expand`: the kernel
    broadcasts the size-1 axes itself)."""
    if step.kind == "unsqueeze":
        return f".unsqueeze({step.dim})"
    if step.kind == "reshape":
        return f".reshape({', '.join(str(s) for s in step.shape)})" if step.shape else ".reshape(())"
    if step.kind == "select":
        return f".select({step.dim}, {step.index})"
    if step.kind == "narrow":
        return f".narrow({step.dim}, {step.start}, {step.length})"
    raise OpError(f"'{step.kind}' has no forward text")


def strided(shape: Shape, d: int, start: int | None, stop: int | None, step: int) -> list[Step]:
    """`x[..., start:stop:step]` along axis d as steps: torch takes it as a strided view, which no
    kernel reads, so the axis is split into (n / step, step) (a free reshape of a contiguous tensor),
    the phase `start % step` selected and the run of positions narrowed; both become copies
    (`_view_copies`). A step of 1 is one narrow. A PatchMerging's `x[:, 0::2, 1::2]` is two such axes."""
    n = shape[d]
    lo, hi, st = slice(start, stop, step).indices(n)
    picked = range(lo, hi, st)
    if st == 1:
        return [] if (lo == 0 and len(picked) == n) else [Step("narrow", dim=d, start=lo, length=len(picked))]
    if st < 1:
        raise OpError(f"a slice with step {st} is not a view the kernel reads (take a positive step)")
    if not picked:
        raise OpError(f"the slice {start}:{stop}:{step} of axis {d} ({n}) is empty")
    if n % st:
        raise OpError(f"a strided slice (step {st}) of axis {d} of {n}, not a multiple of the step, is not read "
                      "(pad or narrow the axis to a multiple first)")
    q, phase = divmod(picked[0], st)
    steps = [Step("reshape", shape=(*shape[:d], n // st, st, *shape[d + 1:])), Step("select", dim=d + 1, index=phase)]
    if not (q == 0 and len(picked) == n // st):
        steps.append(Step("narrow", dim=d, start=q, length=len(picked)))
    return steps


# ------------------------------------------------------------------ reading the torch spellings
SPLITTERS = ("chunk", "split", "unbind")
"""Calls that return a tuple of views of one tensor: each element is one narrow (a select for unbind)."""


def read_split(name: str, shape: Shape, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Step]:
    """The view each element of `x.chunk(n, dim)`, `x.split(size or sizes, dim)` or `x.unbind(dim)` is,
    in order, on a tensor of `shape` (args/kwargs are constants, after the tensor), as torch splits."""
    rank = len(shape)
    first = args[0] if args else None
    if name == "unbind":
        d = axis(kwargs.get("dim", first if first is not None else 0), rank)
        return [Step("select", dim=d, index=i) for i in range(shape[d])]
    d = axis(kwargs.get("dim", args[1] if len(args) > 1 else 0), rank)
    size = shape[d]
    if name == "chunk":
        n = kwargs.get("chunks", first)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise OpError(f"chunk({n!r}) needs a positive number of chunks")
        step = -(-size // n)
        lengths = [min(step, size - a) for a in range(0, size, step)]
    else:
        sizes = kwargs.get("split_size_or_sections", kwargs.get("split_size", first))
        if isinstance(sizes, int) and not isinstance(sizes, bool) and sizes > 0:
            lengths = [min(sizes, size - a) for a in range(0, size, sizes)]
        elif isinstance(sizes, tuple | list) and all(isinstance(x, int) and x >= 0 for x in sizes):
            lengths = list(sizes)
            if sum(lengths) != size:
                raise OpError(f"split sizes {tuple(lengths)} do not add up to axis {d}'s {size}")
        else:
            raise OpError(f"split({sizes!r}) needs a positive size or a list of sizes")
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    return [Step("narrow", dim=d, start=a, length=n) for a, n in zip(starts, lengths, strict=True)]


def read_view(name: str, shape: Shape, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Step]:
    """The steps of one view call on a tensor of `shape` (args/kwargs are constants, after the
    tensor). OpError when the call is not a view or its arguments do not fit the shape."""
    rank = len(shape)
    if name == "unsqueeze":
        d = kwargs.get("dim", args[0] if args else None)
        return [Step("unsqueeze", dim=axis(d, rank + 1))]
    if name in ("view", "reshape"):
        sizes = kwargs.get("shape", kwargs.get("size"))
        if sizes is None:
            sizes = args[0] if len(args) == 1 and isinstance(args[0], tuple | list) else tuple(args)
        return [Step("reshape", shape=_infer(tuple(sizes), shape))]
    if name == "flatten":
        start = axis(kwargs.get("start_dim", args[0] if args else 0), max(rank, 1))
        end = axis(kwargs.get("end_dim", args[1] if len(args) > 1 else -1), max(rank, 1))
        new = (*shape[:start], math.prod(shape[start:end + 1]), *shape[end + 1:])
        return [Step("reshape", shape=new)]
    if name == "squeeze":
        d = kwargs.get("dim", args[0] if args else None)
        if d is None:
            return [Step("reshape", shape=tuple(s for s in shape if s != 1))]
        dims = {axis(x, rank) for x in (d if isinstance(d, tuple | list) else (d,))}
        return [Step("reshape", shape=tuple(s for i, s in enumerate(shape) if not (i in dims and s == 1)))]
    if name == "expand":
        sizes = kwargs.get("size")
        if sizes is None:
            sizes = args[0] if len(args) == 1 and isinstance(args[0], tuple | list) else tuple(args)
        sizes = tuple(sizes)
        pad = (1,) * (len(sizes) - rank) + shape
        return [Step("expand", shape=tuple(p if s == -1 else s for s, p in zip(sizes, pad, strict=True)))]
    if name == "select":
        d = axis(kwargs.get("dim", args[0] if args else None), rank)
        i = kwargs.get("index", args[1] if len(args) > 1 else None)
        if not isinstance(i, int) or not -shape[d] <= i < shape[d]:
            raise OpError(f"select index {i!r} is outside axis {d} of {shape}")
        return [Step("select", dim=d, index=i % shape[d])]
    if name == "narrow":
        d = axis(kwargs.get("dim", args[0] if args else None), rank)
        start = kwargs.get("start", args[1] if len(args) > 1 else None)
        length = kwargs.get("length", args[2] if len(args) > 2 else None)
        if not isinstance(start, int) or not isinstance(length, int):
            raise OpError("narrow needs constant start and length")
        return [Step("narrow", dim=d, start=start % shape[d] if start < 0 else start, length=length)]
    raise OpError(f"'{name}' is not a view")


def read_index(shape: Shape, key: Any) -> list[Step]:
    """`x[key]` as steps: ints select, unit-step slices narrow, None unsqueezes, `...` skips."""
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(1 for k in items if k == "...") > 1:
        raise OpError("an index with two '...'")
    taking = sum(1 for k in items if k not in ("None", "..."))
    if taking > len(shape):
        raise OpError(f"too many indices for a rank-{len(shape)} tensor")
    steps: list[Step] = []
    pos = 0  # the axis of the current (partly viewed) tensor the next item applies to
    cur = tuple(shape)
    for k in items:
        if k == "...":
            pos += len(shape) - taking
            continue
        if k == "None":
            step = Step("unsqueeze", dim=pos)
            pos += 1
        elif isinstance(k, bool) or not isinstance(k, int | dict):
            raise OpError(f"index {k!r} is not an int, a slice, None or ...")
        elif isinstance(k, int):
            if not -cur[pos] <= k < cur[pos]:
                raise OpError(f"index {k} is outside axis {pos} of {cur}")
            step = Step("select", dim=pos, index=k % cur[pos])
        else:
            lo, hi, st = k.get("slice", (None, None, None))
            if not all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in (lo, hi, st)):
                raise OpError(f"the slice {lo}:{hi}:{st} has a bound that is not a constant int")
            taken = strided(cur, pos, lo, hi, 1 if st is None else st)
            pos += 1
            for step in taken:  # a full slice takes nothing
                cur = out_shape(step, cur)
                steps.append(step)
            continue
        cur = out_shape(step, cur)
        steps.append(step)
    return steps


def _infer(sizes: tuple[Any, ...], shape: Shape) -> Shape:
    total = math.prod(shape)
    if any(not isinstance(s, int) or isinstance(s, bool) for s in sizes):
        raise OpError(f"view sizes {sizes} are not all constants")
    if sizes.count(-1) > 1:
        raise OpError(f"view sizes {sizes} have two -1")
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0 or total % known:
            raise OpError(f"cannot view {shape} as {sizes}")
        sizes = tuple(total // known if s == -1 else s for s in sizes)
    if math.prod(sizes) != total:
        raise OpError(f"cannot view {shape} as {sizes}")
    return tuple(int(s) for s in sizes)


VIEW_NAMES = ("unsqueeze", "view", "reshape", "flatten", "squeeze", "expand", "select", "narrow")


def _view_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    shape = tuple(shapes[0])
    for step in attrs.get("steps", ()):
        shape = out_shape(step, shape)
    return shape


def _view_reference(x: np.ndarray, attrs: Mapping[str, Any]) -> np.ndarray:
    for step in attrs.get("steps", ()):
        x = apply(step, x)
    return x


COPIED_STEPS = ("narrow", "select")
"""Views that pick part of an axis: torch takes them without a copy, but the result is not contiguous,
so a kernel cannot read it as its input and forward may not copy it (only kernels compute)."""


def _view_copies(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """A view that picks part of an axis as a copy kernel (SLICE.rows-copy): each narrow (a select is a
    narrow of one, then its axis dropped) becomes a `narrow` node, a layout anchor with a kernel of its
    own, and the steps around it stay views forward takes for free (a reshape or an unsqueeze of a
    contiguous tensor). So `q, k = x.split(d, -1)`, `x.chunk(3, 1)`, `x[:, 0]` and `x.unbind(1)` of a
    kernel's output (or of a task input) give kernels that read contiguous tensors."""
    steps = [step_of(s) for s in n.attrs.get("steps", ())]
    if not any(s.kind in COPIED_STEPS for s in steps):
        return None
    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None or any(s.kind == "expand" for s in steps):
        return None  # an expand is read by the kernel that widens it (a broadcast), not copied
    parts: list[Any] = []
    pending: list[Step] = []
    src, cur = n.inputs[0], tuple(shape)

    def flush_views(last: bool) -> None:
        nonlocal src
        if not pending:
            return
        view = part(n, "" if last else f"v{len(parts)}", "view", "view", (src,),
                    {"steps": tuple(pending)}, cur)
        parts.append(view)
        src = view.id
        pending.clear()

    for k, s in enumerate(steps):
        if s.kind not in COPIED_STEPS:
            pending.append(s)
            cur = out_shape(s, cur)
            continue
        flush_views(last=False)
        narrow = Step("narrow", dim=s.dim, start=s.index if s.kind == "select" else s.start,
                      length=1 if s.kind == "select" else s.length)
        cur = out_shape(narrow, cur)
        last = k == len(steps) - 1 and s.kind == "narrow"
        copy = part(n, "" if last else f"s{len(parts)}", "narrow", "layout", (src,),
                    {"dim": narrow.dim, "start": narrow.start, "length": narrow.length}, cur)
        parts.append(copy)
        src = copy.id
        if s.kind == "select":
            pending.append(Step("reshape", shape=(*cur[:s.dim], *cur[s.dim + 1:])))
            cur = out_shape(pending[-1], cur)
    flush_views(last=True)
    return Decomposition(tuple(parts))


KINDS = (
    OpKind("view", "view", _view_shape, _view_reference, functions=("unsqueeze", "reshape", "flatten", "squeeze",
                                                                     "select", "narrow"),
           methods=VIEW_NAMES, note="a chain of views; attrs['steps'] lists them",
           aten=tuple(f"aten.{n}" for n in ("view.default", "_unsafe_view.default", "reshape.default",
                                             "unsqueeze.default", "squeeze.dim", "squeeze.dims", "squeeze.default",
                                             "expand.default", "select.int", "slice.Tensor",
                                             "split_with_sizes.default", "split.Tensor", "unbind.int")),
           decompose=_view_copies),
)
