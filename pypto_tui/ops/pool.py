"""Pooling: max and average pools 1-D to 3-D, and the adaptive pools (global average pooling is
`adaptive_avg_pool(x, 1)`). Shapes by torch's formulas (ceil_mode included)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pypto_tui.ops.base import REQUIRED, Decomposition, OpError, OpKind, Shape, ShapeOf
from pypto_tui.ops.conv import tup


def _nd(attrs: Mapping[str, Any], x: Shape) -> int:
    nd = attrs.get("nd")
    return int(nd) if isinstance(nd, int) else len(x) - 2


def _pool_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    nd = _nd(attrs, x)
    if nd < 1 or len(x) < nd + 1:
        raise OpError(f"a {nd}-d pool of {x}")
    lead = x[:len(x) - nd]
    k = tup(attrs.get("kernel_size"), nd, "kernel_size")
    st = attrs.get("stride")
    s = k if st is None or st == () or st == [] else tup(st, nd, "stride")
    p = tup(attrs.get("padding", 0), nd, "padding")
    d = tup(attrs.get("dilation", 1), nd, "dilation")
    ceil = bool(attrs.get("ceil_mode", False))
    out = []
    for i in range(nd):
        n = x[len(lead) + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1
        o = (math.ceil(n / s[i]) if ceil else n // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x[len(lead) + i] + p[i]:
            o -= 1
        out.append(o)
    if any(o < 1 for o in out):
        raise OpError(f"the pool's output {tuple(out)} is empty")
    return (*lead, *out)


def _adaptive_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    x = tuple(shapes[0])
    nd = _nd(attrs, x)
    size = attrs.get("output_size")
    o = tuple(size) if isinstance(size, tuple | list) else (size,) * nd
    sizes = tuple(x[len(x) - nd + i] if v is None else v for i, v in enumerate(o))
    if not all(isinstance(v, int) for v in sizes):
        raise OpError("output_size must be constants")
    return (*x[:len(x) - nd], *(int(v) for v in sizes))


def _names(kind: str, adaptive: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    pre = "adaptive_" if adaptive else ""
    mod = ("Adaptive" if adaptive else "") + ("MaxPool" if kind == "max" else "AvgPool")
    return tuple(f"{pre}{kind}_pool{d}d" for d in (1, 2, 3)), tuple(f"{mod}{d}d" for d in (1, 2, 3))


_MAX, _MAX_M = _names("max")
_AVG, _AVG_M = _names("avg")
_AMAX, _AMAX_M = _names("max", True)
_AAVG, _AAVG_M = _names("avg", True)

def _global_mean(n: Any, shape_of: ShapeOf) -> Decomposition | None:
    """An adaptive average pool whose every output size is 1 (global average pooling): the mean over
    every spatial axis, kept as size 1."""
    size = n.attrs.get("output_size")
    shape = shape_of(n.inputs[0]) if n.inputs else None
    if shape is None or len(shape) < 3:
        return None
    sizes = size if isinstance(size, tuple | list) else (size,) * (len(shape) - 2)
    if not (len(sizes) == len(shape) - 2 and all(s == 1 for s in sizes)):
        return None
    return Decomposition((replace(n, op="mean", role="reduction",
                                  attrs={"dim": tuple(range(2, len(shape))), "keepdim": True}),))


KINDS = (
    OpKind("max_pool", "pool", _pool_shape, None, functions=_MAX, modules=_MAX_M, pattern="window",
           params=("kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"),
           defaults={"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False, "return_indices": False},
           aten=tuple(f"aten.max_pool{d}d{w}.default" for d in (1, 2, 3) for w in ("", "_with_indices")),
           module_signature=(("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("dilation", 1),
                             ("return_indices", False), ("ceil_mode", False))),
    OpKind("avg_pool", "pool", _pool_shape, None, functions=_AVG, modules=_AVG_M, pattern="window",
           params=("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"),
           defaults={"stride": None, "padding": 0, "ceil_mode": False, "count_include_pad": True,
                     "divisor_override": None},
           aten=tuple(f"aten.avg_pool{d}d.default" for d in (1, 2, 3)),
           # AvgPool2d / 3d's (AvgPool1d has no divisor_override: contract/signatures.py keeps its row)
           module_signature=(("kernel_size", REQUIRED), ("stride", None), ("padding", 0), ("ceil_mode", False),
                             ("count_include_pad", True), ("divisor_override", None))),
    OpKind("adaptive_max_pool", "pool", _adaptive_shape, None, functions=_AMAX, modules=_AMAX_M,
           params=("output_size", "return_indices"),
           aten=tuple(f"aten.adaptive_max_pool{d}d.default" for d in (1, 2, 3)),
           module_signature=(("output_size", REQUIRED),)),
    OpKind("adaptive_avg_pool", "pool", _adaptive_shape, None, functions=_AAVG, modules=_AAVG_M,
           params=("output_size",), decompose=_global_mean,
           aten=tuple(f"aten.{u}adaptive_avg_pool{d}d.default" for u in ("", "_") for d in (1, 2, 3)),
           module_signature=(("output_size", REQUIRED),)),
)
