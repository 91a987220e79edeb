"""Convolutions and pooling: their parameters as contract fields, and the output size they give.

A conv or pool module (`nn.Conv2d(...)`, `nn.ConvTranspose3d(...)`, `nn.MaxPool1d(...)`, ...) or
call (`F.max_pool2d(x, 3, 2)`) leaves its arguments in `op_args`, read statically: kernel size,
stride, padding (an int, one per axis, or the strings 'same' / 'valid'), dilation, groups,
output_padding, bias, ceil_mode, count_include_pad. `window_spec` turns them into one normalised
record (`WindowSpec`: every size per spatial axis, padding as (low, high) pairs); `derive_window`
is the semantics step for the two families (output shape, the formula with the output-size
arithmetic written out with its numbers, and why a variant is not scaffolded).

Pure: no libcst, no torch. The sizes follow torch's own definitions (`torch.nn.Conv2d`,
`ConvTranspose2d`, `MaxPool2d`, `AvgPool2d` documentation), which the tests check against torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pypto_tui.ops.roles import traits
from pypto_tui.shapes import fmt_dims

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract, Input

KINDS = ("conv", "conv_transpose", "max_pool", "avg_pool")
SPATIAL = ("L", "H", "W")  # axis letters used in the formulas: 1-D "L", 2-D "H, W", 3-D "D, H, W"
# op_args keys the contract form shows for each kind (the fields a user may correct).
WINDOW_FIELDS: dict[str, tuple[str, ...]] = {
    "conv": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias"),
    "conv_transpose": ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding",
                       "dilation", "groups", "bias"),
    "max_pool": ("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
    "avg_pool": ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"),
}


def window_fields(c: Contract) -> tuple[str, ...]:
    """The op_args keys a form shows for the contract's conv or pool (empty for other ops)."""
    kind = kind_of(c) if traits(c.family).window else None
    return WINDOW_FIELDS.get(kind or "", ())


class WindowError(ValueError):
    """The parameters do not describe a valid conv or pool (the message says which one and why)."""


@dataclass(frozen=True)
class PointwiseStage:
    """A 1x1 conv applied to the window op's output (a depthwise-separable conv's second half).

    Read from `self.<attr>(self.<first>(x))` where `self.<attr>` is an `nn.Conv*d` with kernel 1,
    stride 1, no padding, dilation 1 and one group: on the first op's output it is a matmul of
    its (out_channels x in_channels) weights with every output position's channels.
    """

    attr: str
    in_channels: int
    out_channels: int
    bias: bool = False


@dataclass(frozen=True)
class WindowSpec:
    """One conv or pool, normalised: every size is a tuple with one entry per spatial axis.

    `padding` holds (low, high) per axis (they differ only for padding='same' with an even
    dilated kernel). For a transposed conv `padding` is the torch argument (it removes rows from
    the output), `output_padding` the extra rows at the high end. `weight_attr` is the `self.`
    attribute that holds the module (its weight and bias), None for a functional call.
    """

    kind: str
    nd: int
    batch: int
    in_channels: int
    out_channels: int
    spatial: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[tuple[int, int], ...]
    dilation: tuple[int, ...]
    groups: int = 1
    output_padding: tuple[int, ...] = ()
    bias: bool = False
    ceil_mode: bool = False
    count_include_pad: bool = True
    divisor_override: int | None = None
    padding_mode: str = "zeros"
    dtype: str = "fp32"
    weight_attr: str | None = None
    pointwise: PointwiseStage | None = None

    # ------------------------------------------------------------------ derived sizes
    @property
    def is_conv(self) -> bool:
        return self.kind in ("conv", "conv_transpose")

    @property
    def transposed(self) -> bool:
        return self.kind == "conv_transpose"

    @property
    def taps(self) -> int:
        return math.prod(self.kernel)

    @property
    def in_per_group(self) -> int:
        return self.in_channels // self.groups

    @property
    def out_per_group(self) -> int:
        return self.out_channels // self.groups

    @property
    def depthwise(self) -> bool:
        """groups == in_channels == out_channels: every channel has its own filter."""
        return self.is_conv and not self.transposed and self.groups == self.in_channels == self.out_channels \
            and self.groups > 1

    @property
    def out_spatial(self) -> tuple[int, ...]:
        return tuple(self.out_size(i) for i in range(self.nd))

    @property
    def output_shape(self) -> tuple[int, ...]:
        """The module's output: the window op's, with the pointwise stage's channels when it has one."""
        channels = self.pointwise.out_channels if self.pointwise else self.out_channels
        return (self.batch, channels, *self.out_spatial)

    @property
    def weight_shape(self) -> tuple[int, ...]:
        """The module's weight: (OC, C/G, *K) for a conv, (C, OC/G, *K) for a transposed one."""
        if self.transposed:
            return (self.in_channels, self.out_per_group, *self.kernel)
        return (self.out_channels, self.in_per_group, *self.kernel)

    def extent(self, i: int) -> int:
        """How many input positions one window spans along axis i: dilation * (kernel - 1) + 1."""
        return self.dilation[i] * (self.kernel[i] - 1) + 1

    def out_size(self, i: int) -> int:
        size, k, s, d = self.spatial[i], self.kernel[i], self.stride[i], self.dilation[i]
        lo, hi = self.padding[i]
        if self.transposed:
            return (size - 1) * s - lo - hi + d * (k - 1) + self.output_padding[i] + 1
        span = size + lo + hi - d * (k - 1) - 1
        if self.kind in ("max_pool", "avg_pool") and self.ceil_mode:
            out = -(-span // s) + 1
            if (out - 1) * s >= size + lo:  # torch: the last window must start inside the input or left padding
                out -= 1
            return out
        return span // s + 1

    def axis_names(self) -> tuple[str, ...]:
        return ("L",) if self.nd == 1 else SPATIAL[1:] if self.nd == 2 else ("D", "H", "W")

    # ------------------------------------------------------------------ words
    def size_formulas(self) -> list[str]:
        """The output-size arithmetic per spatial axis, with its numbers (torch's definitions)."""
        out: list[str] = []
        for i, a in enumerate(self.axis_names()):
            size, k, s, d = self.spatial[i], self.kernel[i], self.stride[i], self.dilation[i]
            lo, hi = self.padding[i]
            o = self.out_size(i)
            if self.transposed:
                op = self.output_padding[i]
                out.append(f"O{a} = ({a} - 1)*{s} - {lo} - {hi} + {d}*({k} - 1) + {op} + 1 = "
                           f"({size} - 1)*{s} - {lo + hi} + {d * (k - 1)} + {op} + 1 = {o}")
                continue
            rnd = "ceil" if self.kind in ("max_pool", "avg_pool") and self.ceil_mode else "floor"
            text = (f"O{a} = {rnd}(({a} + {lo} + {hi} - {d}*({k} - 1) - 1) / {s}) + 1 = "
                    f"{rnd}(({size} + {lo + hi} - {d * (k - 1)} - 1) / {s}) + 1 = {o}")
            if rnd == "ceil" and o == -(-(size + lo + hi - d * (k - 1) - 1) // s):
                text += " (the last window would start in the right padding: dropped)"
            out.append(text)
        return out

    def describe(self) -> str:
        """One line: what is computed, with its parameters."""
        k, s, d = fmt_dims(self.kernel), fmt_dims(self.stride), fmt_dims(self.dilation)
        pad = fmt_dims(tuple(lo for lo, _ in self.padding)) if all(lo == hi for lo, hi in self.padding) else \
            fmt_dims(self.padding)
        if self.is_conv:
            name = f"conv_transpose{self.nd}d" if self.transposed else f"conv{self.nd}d"
            extra = (f", output_padding {fmt_dims(self.output_padding)}"
                     if self.transposed and any(self.output_padding) else "")
            text = (f"{name}(x, W {fmt_dims(self.weight_shape)}{', b' if self.bias else ''}, stride {s}, padding {pad}"
                    f"{extra}, dilation {d}, groups {self.groups})")
            if self.pointwise:
                p = self.pointwise
                ones = fmt_dims((1,) * self.nd)
                text = (f"conv{self.nd}d({text}, W {fmt_dims((p.out_channels, p.in_channels, *(1,) * self.nd))}"
                        f"{', b' if p.bias else ''}, kernel {ones})")
            return text
        name = f"{self.kind}{self.nd}d"
        extra = ""
        if self.kind == "max_pool" and any(v > 1 for v in self.dilation):
            extra += f", dilation {d}"
        if self.ceil_mode:
            extra += ", ceil_mode"
        if self.kind == "avg_pool":
            extra += ", count_include_pad" if self.count_include_pad else ", count_include_pad=False"
            if self.divisor_override:
                extra += f", divisor {self.divisor_override}"
        return f"{name}(x, kernel {k}, stride {s}, padding {pad}{extra})"

    def formula(self, x: str = "x") -> str:
        letters = "".join(a.lower() for a in self.axis_names())
        outs = ", ".join(f"o{c}" for c in letters)
        if self.is_conv and not self.transposed:
            taps = ", ".join(f"k{c}" for c in letters)
            pos = ", ".join(f"o{c}*{s} + k{c}*{d}" for c, s, d in zip(letters, self.stride, self.dilation,
                                                                        strict=True))
            body = (f"out[n, oc, {outs}] = {'b[oc] + ' if self.bias else ''}sum over c in oc's group "
                    f"({self.in_per_group} channel(s)) and {taps} of W[oc, c, {taps}] * x_pad[n, c, {pos}]")
        elif self.transposed:
            body = (f"out = {self.describe()}: every x[n, c, i] adds W[c, oc, k] into out[n, oc, i*stride - "
                    f"padding + k*dilation]")
        else:
            red = "max" if self.kind == "max_pool" else "mean"
            pos = ", ".join(f"o{c}*{s} + k{c}*{d}" for c, s, d in zip(letters, self.stride, self.dilation,
                                                                        strict=True))
            body = f"out[n, c, {outs}] = {red} over the window of x_pad[n, c, {pos}]"
        if self.pointwise:
            p = self.pointwise
            body += (f"; then the pointwise conv: out2[n, o, {outs}] = {'b2[o] + ' if p.bias else ''}sum over "
                     f"the {p.in_channels} channel(s) c of W2[o, c] * out[n, c, {outs}]")
        return f"{body}; {self.describe()}; " + "; ".join(self.size_formulas())


# ------------------------------------------------------------------------------------ reading op_args
def kind_of(c: Contract) -> str | None:
    """conv | conv_transpose | max_pool | avg_pool for the contract's op (module or function)."""
    op = (c.op or "")
    if op.startswith("adaptive_"):
        return None
    for k in ("conv_transpose", "max_pool", "avg_pool", "conv"):
        if op.startswith(k):
            return k
    return None


def _nd(c: Contract, rank: int) -> int:
    module = str(c.op_args.get("module") or "")
    for name in (module, c.op or ""):
        if name[-2:-1].isdigit() and name.endswith("d"):
            return int(name[-2])
    return max(rank - 2, 1)


def _per_axis(value: Any, nd: int, what: str, minimum: int = 0) -> tuple[int, ...]:
    if isinstance(value, bool) or value is None:
        raise WindowError(f"{what} is {value!r}: give an int or one int per spatial axis")
    if isinstance(value, int):
        out = (value,) * nd
    elif isinstance(value, list | tuple) and len(value) == nd and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        out = tuple(value)
    elif isinstance(value, list | tuple) and len(value) == 1 and isinstance(value[0], int):
        out = (int(value[0]),) * nd
    else:
        raise WindowError(f"{what} {value!r} is not an int or {nd} int(s)")
    if any(v < minimum for v in out):
        raise WindowError(f"{what} {value!r} must be >= {minimum}")
    return out


def _padding(value: Any, nd: int, kernel: tuple[int, ...], dilation: tuple[int, ...], stride: tuple[int, ...],
             kind: str) -> tuple[tuple[int, int], ...]:
    if isinstance(value, str):
        if kind != "conv":
            raise WindowError(f"padding={value!r}: the string forms exist for Conv only")
        if value == "valid":
            return ((0, 0),) * nd
        if value == "same":
            if any(s != 1 for s in stride):
                raise WindowError("padding='same' needs stride 1 (torch refuses it otherwise)")
            out = []
            for k, d in zip(kernel, dilation, strict=True):
                total = d * (k - 1)
                out.append((total // 2, total - total // 2))  # torch puts the odd element at the high end
            return tuple(out)
        raise WindowError(f"padding={value!r}: use an int, one int per axis, 'same' or 'valid'")
    return tuple((p, p) for p in _per_axis(value, nd, "padding"))


def _functional_weights(kind: str, channels: int, ops: list[Input], a: dict[str, Any]) -> dict[str, Any]:
    """F.conv2d(x, weight, bias, ...): channels, kernel and bias come from the weight input's shape."""
    w = ops[1] if len(ops) > 1 else None
    if w is None or w.shape is None or len(w.shape) < 3:
        raise WindowError("the weight input's shape is unknown")
    groups = int(a.get("groups", 1) or 1)
    out_channels = w.shape[1] * groups if kind == "conv_transpose" else w.shape[0]
    return {"in_channels": channels, "out_channels": out_channels, "kernel_size": tuple(w.shape[2:]),
            "bias": len(ops) > 2}


def window_spec(c: Contract, x: Input | None = None) -> WindowSpec:
    """The contract's conv or pool, normalised. Raises WindowError with the reason."""
    kind = kind_of(c)
    if kind is None:
        raise WindowError(f"{c.op} is not a conv or pool pypto-tui models")
    ops = list(c.operands)
    x = x or (ops[0] if ops else None)
    if x is None or x.shape is None:
        raise WindowError("the input's shape is unknown")
    a = dict(c.op_args)
    nd = _nd(c, len(x.shape))
    if len(x.shape) != nd + 2:
        raise WindowError(f"a {nd}-D {kind} takes a (N, C, {', '.join('...' for _ in range(nd))}) input; "
                          f"x has shape {x.shape} (unbatched inputs are not scaffolded)")
    batch, channels, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    if kind in ("conv", "conv_transpose") and "module" not in a:
        a.update(_functional_weights(kind, channels, ops, a))
    if "kernel_size" not in a:
        raise WindowError(f"kernel_size of {c.op} is not known")
    kernel = _per_axis(a["kernel_size"], nd, "kernel_size", 1)
    if kind in ("max_pool", "avg_pool"):
        stride_v = a.get("stride")
        stride = kernel if stride_v in (None, (), []) else _per_axis(stride_v, nd, "stride", 1)
    else:
        stride = _per_axis(a.get("stride", 1), nd, "stride", 1)
    dilation = _per_axis(a.get("dilation", 1), nd, "dilation", 1) if kind != "avg_pool" else (1,) * nd
    padding = _padding(a.get("padding", 0), nd, kernel, dilation, stride, kind)
    groups = int(a.get("groups", 1) or 1)
    in_channels = int(a.get("in_channels", channels)) if kind in ("conv", "conv_transpose") else channels
    out_channels = int(a.get("out_channels", channels)) if kind in ("conv", "conv_transpose") else channels
    if kind in ("conv", "conv_transpose"):
        if in_channels != channels:
            raise WindowError(f"the module expects {in_channels} input channels, x has {channels}")
        if groups < 1 or in_channels % groups or out_channels % groups:
            raise WindowError(f"groups={groups} must divide in_channels {in_channels} and out_channels {out_channels}")
    output_padding = _per_axis(a.get("output_padding", 0), nd, "output_padding") if kind == "conv_transpose" \
        else (0,) * nd
    if kind == "conv_transpose":
        for i in range(nd):
            if output_padding[i] >= max(stride[i], dilation[i]):
                raise WindowError(f"output_padding {output_padding[i]} must be smaller than the stride or the "
                                  f"dilation (torch refuses it)")
    bias_v = a.get("bias", kind in ("conv", "conv_transpose") and "module" in a)
    spec = WindowSpec(
        kind=kind, nd=nd, batch=batch, in_channels=in_channels, out_channels=out_channels, spatial=spatial,
        kernel=kernel, stride=stride, padding=padding, dilation=dilation, groups=groups,
        output_padding=output_padding, bias=bool(bias_v) if not isinstance(bias_v, str) else True,
        ceil_mode=bool(a.get("ceil_mode", False)), count_include_pad=bool(a.get("count_include_pad", True)),
        divisor_override=a.get("divisor_override") or None, padding_mode=str(a.get("padding_mode", "zeros")),
        dtype=x.dtype or "fp32", weight_attr=a.get("attr"),
    )
    if kind in ("max_pool", "avg_pool"):
        for i in range(nd):
            if 2 * max(padding[i]) > kernel[i] * (dilation[i] if kind == "max_pool" else 1):
                raise WindowError(f"padding {padding[i][0]} exceeds half the window along axis {i} "
                                  "(torch refuses it)")
    if any(o < 1 for o in spec.out_spatial):
        raise WindowError(f"the output would be empty: {'; '.join(spec.size_formulas())}")
    stage = a.get("pointwise")
    if isinstance(stage, dict):
        spec = _with_pointwise(spec, stage)
    return spec


def _with_pointwise(spec: WindowSpec, stage: dict[str, Any]) -> WindowSpec:
    """The spec with its pointwise stage, checked against the first op's output channels."""
    try:
        in_channels = int(stage["in_channels"])
        out_channels = int(stage["out_channels"])
    except (KeyError, TypeError, ValueError):
        raise WindowError("the pointwise conv's in_channels and out_channels are not known") from None
    if in_channels != spec.out_channels:
        raise WindowError(f"the pointwise conv expects {in_channels} input channels; the {spec.kind} before it "
                          f"gives {spec.out_channels}")
    if out_channels < 1:
        raise WindowError(f"the pointwise conv's out_channels {out_channels} must be >= 1")
    bias = stage.get("bias", True)
    return replace(spec, pointwise=PointwiseStage(str(stage.get("attr") or ""), in_channels, out_channels,
                                                  bool(bias) if not isinstance(bias, str) else True))


def unsupported_reason(spec: WindowSpec, c: Contract) -> str:
    """Why the scaffolds do not cover this variant ('' when they do)."""
    if spec.padding_mode != "zeros":
        return f"padding_mode='{spec.padding_mode}' is not scaffolded (zero padding is)"
    if c.op_args.get("return_indices"):
        return "return_indices=True returns (values, indices): only the values are scaffolded"
    if spec.is_conv and spec.weight_attr is None:
        return "a functional conv takes its weight as a forward input: only nn.Conv*d modules are scaffolded"
    if spec.dtype not in ("fp32",):
        return f"conv and pool scaffolds are fp32; the input is {spec.dtype}"
    if spec.pointwise and not spec.depthwise:
        return ("a pointwise conv is scaffolded after a depthwise conv (depthwise-separable); after this "
                f"{spec.kind} it would need a second cube plan")
    return ""


# ------------------------------------------------------------------------------------ semantics
def derive_window(c: Contract, ops: list[Input], out: Any) -> None:
    """The semantics step for the conv and pool families (called from semantics.derive)."""
    out.asymmetric = False
    if c.op_args.get("composite") or c.op_args.get("fused"):
        out.unknown.setdefault("formula", c.reason or f"the {c.family} is part of a larger expression")
        return
    if (c.op or "").startswith("adaptive_"):
        out.supported = False
        out.reason = (f"{c.op}: adaptive pooling picks its windows from the output size; pypto-tui scaffolds "
                      "max/avg pooling with a fixed kernel, stride and padding")
        out.unknown["output_shape"] = out.reason
        return
    try:
        spec = window_spec(c)
    except WindowError as exc:
        out.unknown["output_shape"] = str(exc)
        out.unknown["formula"] = str(exc)
        return
    out.output_shape = spec.output_shape
    out.formula = spec.formula(ops[0].name if ops else "x")
    reason = unsupported_reason(spec, c)
    if reason:
        out.supported = False
        out.reason = reason


# ------------------------------------------------------------------------------------ smaller test shapes
def kept_sizes(c: Contract) -> set[int]:
    """Sizes a conv's module is built for (its input channels): a test at smaller shapes keeps them."""
    if not traits(c.family).channels_fixed or not c.operands or not c.operands[0].shape or len(c.operands[0].shape) < 3:
        return set()
    return {c.operands[0].shape[1]}


def min_sizes(c: Contract) -> dict[int, int]:
    """Per input size, the smallest value that still gives every spatial axis it sizes at least two
    output positions (so a block loop has something to cut): a test at smaller shapes stays valid."""
    try:
        spec = window_spec(c)
    except WindowError:
        return {}
    out: dict[int, int] = {}
    for i, size in enumerate(spec.spatial):
        lo, hi = spec.padding[i]
        need = 2 if spec.transposed else max(2, spec.extent(i) + spec.stride[i] - lo - hi)
        out[size] = max(out.get(size, 0), need)
    return out
