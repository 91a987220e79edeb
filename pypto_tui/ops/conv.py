"""Convolutions and transposed convolutions, 1-D to 3-D (nn.Conv*d, nn.ConvTranspose*d, F.conv*).

The shape function is torch's output-size formula; the module creates weight (out, in / groups,
*kernel) (transposed: (in, out / groups, *kernel)) and bias (out,). No numpy reference here: the
level-1 contract's window reference (contract/conv.py) checks single convs, and the baseline
itself checks a chain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.ops.base import REQUIRED, OpError, OpKind, Shape


def tup(v: Any, n: int, what: str) -> tuple[int, ...]:
    t = tuple(v) if isinstance(v, tuple | list) else (v,) * n
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n or not all(isinstance(x, int) and not isinstance(x, bool) for x in t):
        raise OpError(f"{what} {v!r} is not {n} constant int(s)")
    return t


def _nd(attrs: Mapping[str, Any], x: Shape) -> int:
    nd = attrs.get("nd")
    return int(nd) if isinstance(nd, int) else len(x) - 2


def _conv_shape(transposed: bool) -> Any:
    def shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
        x = tuple(shapes[0])
        nd = _nd(attrs, x)
        if nd < 1 or len(x) != nd + 2:
            raise OpError(f"a {nd}-d conv needs (N, C, {'L' if nd == 1 else '...'}) input, got {x}")
        k = tup(attrs.get("kernel_size"), nd, "kernel_size")
        s = tup(attrs.get("stride", 1), nd, "stride")
        p = attrs.get("padding", 0)
        if isinstance(p, str):
            if p == "same" and not transposed:
                return (x[0], int(attrs["out_channels"]), *x[2:])
            if p != "valid":
                raise OpError(f"padding {p!r}")
            p = 0
        pad = tup(p, nd, "padding")
        d = tup(attrs.get("dilation", 1), nd, "dilation")
        oc = attrs.get("out_channels")
        if not isinstance(oc, int):
            raise OpError("out_channels must be a constant")
        if transposed:
            op = tup(attrs.get("output_padding", 0), nd, "output_padding")
            sp = tuple((x[2 + i] - 1) * s[i] - 2 * pad[i] + d[i] * (k[i] - 1) + op[i] + 1 for i in range(nd))
        else:
            sp = tuple((x[2 + i] + 2 * pad[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(nd))
        if any(v < 1 for v in sp):
            raise OpError(f"the conv's output {sp} is empty")
        return (x[0], oc, *sp)
    return shape


def _weights(transposed: bool) -> Any:
    def weights(attrs: Mapping[str, Any]) -> dict[str, Shape]:
        i, o, g = attrs.get("in_channels"), attrs.get("out_channels"), attrs.get("groups", 1)
        nd = attrs.get("nd")
        if not (isinstance(i, int) and isinstance(o, int) and isinstance(g, int) and isinstance(nd, int)):
            raise OpError("the conv's channels and groups must be constants")
        k = tup(attrs.get("kernel_size"), nd, "kernel_size")
        w = (i, o // g, *k) if transposed else (o, i // g, *k)
        return {"weight": w, "bias": (o,)} if attrs.get("bias", True) else {"weight": w}
    return weights


_SHAPE = (("in_channels", REQUIRED), ("out_channels", REQUIRED), ("kernel_size", REQUIRED), ("stride", 1),
          ("padding", 0))
_TAIL = (("padding_mode", "zeros"), ("device", None), ("dtype", None))

KINDS = (
    OpKind("conv", "conv", _conv_shape(False), None, functions=("conv1d", "conv2d", "conv3d"),
           modules=("Conv1d", "Conv2d", "Conv3d"), pattern="window", weights=_weights(False),
           params=("weight", "bias", "stride", "padding", "dilation", "groups"),
           defaults={"bias": None, "stride": 1, "padding": 0, "dilation": 1, "groups": 1},
           module_signature=(*_SHAPE, ("dilation", 1), ("groups", 1), ("bias", True), *_TAIL),
           aten=("aten.convolution.default",)),
    OpKind("conv_transpose", "conv", _conv_shape(True), None,
           functions=("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"),
           modules=("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"), pattern="window",
           weights=_weights(True), params=("weight", "bias", "stride", "padding", "output_padding", "groups",
                                           "dilation"),
           defaults={"bias": None, "stride": 1, "padding": 0, "output_padding": 0, "groups": 1, "dilation": 1},
           module_signature=(*_SHAPE, ("output_padding", 0), ("groups", 1), ("bias", True), ("dilation", 1),
                             *_TAIL)),
)
