"""Rotary embeddings' `rotate_half`, read from how PyTorch code writes it.

`torch.cat((-x[..., h:], x[..., :h]), dim=-1)` with h half of x's last axis is one operation of its
own, [-x2, x1] over the halves of the last axis. Folding it into `rotate_half(x)` before the
operator is recognised lets `x * cos + rotate_half(x) * sin` be one elementwise expression (the
registry's `rotate_half`, a row-local kind: its kernel keeps the last axis whole and writes the
halves with two views and a concat, as PyPTO's own model kernels do).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pypto_tui.contract.ir import Node

FULL = {"slice": (None, None, None)}


def _half_of(n: Node, shapes: Mapping[str, tuple[int, ...]], second: bool) -> str | None:
    """The input whose first (or second) half of the last axis `n` selects, else None."""
    if n.kind != "index" or len(n.args) != 1 or n.args[0].kind != "in":
        return None
    x = n.args[0].name
    shape = shapes.get(x)
    if not shape or shape[-1] % 2:
        return None
    d, h = shape[-1], shape[-1] // 2
    sub: Any = n.value
    items = list(sub) if isinstance(sub, tuple) else [sub]
    if not items or not isinstance(items[-1], dict) or "slice" not in items[-1]:
        return None
    lead = items[:-1]
    if not (lead == ["..."] or (len(lead) == len(shape) - 1 and all(i == FULL for i in lead))):
        return None
    start, stop, step = items[-1]["slice"]
    if step not in (None, 1):
        return None
    if second:
        return x if start in (h, h - d) and stop in (None, d) else None
    return x if start in (None, 0) and stop in (h, h - d) else None


def _is_last_axis(dim: Node | None, rank: int) -> bool:
    return dim is not None and dim.kind == "const" and dim.value in (-1, rank - 1)


def fold_rotate_half(root: Node, shapes: Mapping[str, tuple[int, ...]]) -> Node:
    """`root` with every written-out rotate_half of a forward input replaced by the call."""
    if root.kind == "call" and root.name == "cat" and root.args and root.args[0].kind == "tuple":
        parts = root.args[0].args
        dim = root.kw().get("dim", root.args[1] if len(root.args) > 1 else None)
        if len(parts) == 2 and parts[0].kind == "neg":
            x = _half_of(parts[0].args[0], shapes, second=True)
            if x is not None and _half_of(parts[1], shapes, second=False) == x and _is_last_axis(dim, len(shapes[x])):
                return Node("call", "rotate_half", (parts[0].args[0].args[0],), value="torch")
    args = tuple(fold_rotate_half(a, shapes) for a in root.args)
    kwargs = tuple((k, fold_rotate_half(v, shapes)) for k, v in root.kwargs)
    if args == root.args and kwargs == root.kwargs:
        return root
    return replace(root, args=args, kwargs=kwargs)
