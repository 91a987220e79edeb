"""Views over task inputs inside an elementwise expression: `A.unsqueeze(1) * B`, `x[:, None]`,
`c.view(1, -1).expand(8, 16)`, `x.narrow(1, 0, n - 1)`, `x.select(0, 2)`.

A chain of views that ends at an input is a *leaf*: one kernel operand, read through the views
the registry describes (`pypto_tui.ops.views`). `leaves` finds them, folds the sizes a view asks
for (`x.size(1) - 1`, `x.shape[0]`) from the inputs' known shapes, and returns the tree with
each leaf replaced by an input node named after it, which the kernel expression reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pypto_tui.contract import ir
from pypto_tui.contract.ir import Node
from pypto_tui.ops import views as V
from pypto_tui.ops.base import OpError, Shape, broadcast

VIEW_CALLS = (*V.VIEW_NAMES, "expand_as")


class NotAView(Exception):
    """The node reads an input through something that is not a view (the message says what)."""


@dataclass(frozen=True)
class Leaf:
    """One kernel operand: `input` through `steps` (no expand), of `shape`; `broadcast_shape` is
    the shape after the chain's trailing expand (equal to `shape` without one)."""

    id: str
    input: str
    steps: tuple[V.Step, ...]
    shape: Shape
    broadcast_shape: Shape

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "input": self.input, "steps": [s.to_data() for s in self.steps],
                "shape": list(self.shape), "broadcast_shape": list(self.broadcast_shape)}

    @classmethod
    def from_data(cls, d: Mapping[str, Any]) -> Leaf:
        steps = tuple(V.Step(kind=s["kind"], dim=int(s.get("dim", 0)), index=int(s.get("index", 0)),
                             start=int(s.get("start", 0)), length=int(s.get("length", 0)),
                             shape=tuple(int(x) for x in s.get("shape", ()))) for s in d.get("steps", ()))
        return cls(str(d["id"]), str(d["input"]), steps, tuple(int(x) for x in d["shape"]),
                   tuple(int(x) for x in d["broadcast_shape"]))


def is_view(n: Node) -> bool:
    return (n.kind == "call" and n.name in VIEW_CALLS and bool(n.args)) or (n.kind == "index" and bool(n.args))


def fold_int(n: Node, shapes: Mapping[str, Shape]) -> int:
    """A size expression as an int: constants, `x.size(d)`, `x.shape[d]`, + - * // of those."""
    if n.is_const and isinstance(n.value, int) and not isinstance(n.value, bool):
        return int(n.value)
    if n.kind == "call" and n.name == "size" and len(n.args) == 2 and n.args[0].kind == "in":
        shape = shapes.get(n.args[0].name)
        d = fold_int(n.args[1], shapes)
        if shape is not None and -len(shape) <= d < len(shape):
            return shape[d]
    if (n.kind == "index" and n.args and n.args[0].kind == "attr" and n.args[0].name == "shape"
            and n.args[0].args and n.args[0].args[0].kind == "in" and isinstance(n.value, int)):
        shape = shapes.get(n.args[0].args[0].name)
        if shape is not None and -len(shape) <= n.value < len(shape):
            return shape[n.value]
    if n.kind == "bin" and n.name in ("add", "sub", "mul", "floordiv"):
        a, b = fold_int(n.args[0], shapes), fold_int(n.args[1], shapes)
        return {"add": a + b, "sub": a - b, "mul": a * b, "floordiv": a // b if b else 0}[n.name]
    raise NotAView(f"'{ir.brief(n)}' is not a size pypto-tui can fold")


def _const_args(n: Node, shapes: Mapping[str, Shape]) -> tuple[list[Any], dict[str, Any]]:
    def value(a: Node) -> Any:
        if a.is_const:
            return a.value
        if a.kind == "tuple":
            return tuple(value(x) for x in a.args)
        return fold_int(a, shapes)

    return [value(a) for a in n.args[1:]], {k: value(v) for k, v in n.kwargs}


def chain(n: Node, shapes: Mapping[str, Shape]) -> tuple[str, list[V.Step], Shape]:
    """(input, steps, shape) of a view chain ending at an input; NotAView otherwise."""
    if n.kind == "in":
        if n.name not in shapes:
            raise NotAView(f"'{n.name}' is not a tensor input")
        return n.name, [], tuple(shapes[n.name])
    if not is_view(n):
        raise NotAView(f"'{ir.brief(n)}' is not a view")
    name, steps, shape = chain(n.args[0], shapes)
    try:
        if n.kind == "index":
            new = V.read_index(shape, n.value)
        elif n.name == "expand_as":
            other = n.args[1] if len(n.args) > 1 else None
            if other is None:
                raise NotAView("expand_as without its tensor")
            _, _, oshape = chain(other, shapes)
            new = [V.Step("expand", shape=oshape)]
        else:
            args, kwargs = _const_args(n, shapes)
            new = V.read_view(n.name, shape, args, kwargs)
        for step in new:
            shape = V.out_shape(step, shape)
    except OpError as exc:
        raise NotAView(str(exc)) from None
    return name, steps + new, shape


def leaves(root: Node, shapes: Mapping[str, Shape]) -> tuple[Node, list[Leaf]]:
    """The tree with every maximal view chain over an input replaced by a leaf input node, and the
    leaves (only those with views; a bare input stays itself). NotAView when a view sits on a
    computed value or a view cannot be read."""
    found: dict[tuple[str, tuple[V.Step, ...]], Leaf] = {}
    counts: dict[str, int] = {}

    def leaf_of(n: Node) -> Node:
        name, steps, shape = chain(n, shapes)
        expand_at = next((i for i, s in enumerate(steps) if s.kind == "expand"), len(steps))
        if any(s.kind != "expand" for s in steps[expand_at:]):
            raise NotAView(f"a view after expand in '{ir.brief(n)}': take the view before widening")
        kept = tuple(steps[:expand_at])
        if not kept and expand_at == len(steps):
            return Node("in", name=name, value=n.value)
        key = (name, kept)
        if key not in found:
            counts[name] = counts.get(name, 0) + 1
            lid = f"{name}_v" if counts[name] == 1 else f"{name}_v{counts[name]}"
            while lid in shapes:
                lid += "_"
            base = tuple(shapes[name])
            for s in kept:
                base = V.out_shape(s, base)
            found[key] = Leaf(lid, name, kept, base, shape)
        leaf = found[key]
        if not leaf.steps:  # only an expand: the input itself, broadcast by the kernel
            return Node("in", name=name, value=n.value)
        return Node("in", name=leaf.id)

    def walk(n: Node) -> Node:
        if n.kind == "in" or is_view(n):
            if n.kind == "index" and n.args and n.args[0].kind == "attr":
                return n  # x.shape[0]: a size, not a tensor
            return leaf_of(n)
        if not n.args and not n.kwargs:
            return n
        return Node(n.kind, n.name, tuple(walk(a) for a in n.args), tuple((k, walk(v)) for k, v in n.kwargs),
                    n.value)

    return walk(root), list(found.values())


def has_views(root: Node) -> bool:
    return any(is_view(n) for n in root.walk())


def output_shape(leaf_shapes: list[Shape]) -> Shape:
    try:
        return broadcast(leaf_shapes)
    except OpError as exc:
        raise NotAView(str(exc)) from None
