"""The main kernels of a convolution: im2col with one matmul per block of rows, flat taps,
depthwise taps and the pointwise stage (CONV.im2col, CONV.flat-taps, CONV.depthwise-taps,
CONV.depthwise-flat, CONV.pointwise-stage)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, name
from pypto_tui.codegen.patterns.window.emit import (
    Names,
    dim_names,
    expr,
    expr_list,
    factory_prelude,
    product,
    set_tile,
    tap_indices,
    tap_window,
    tensor_param,
)
from pypto_tui.codegen.spec import Constant, KernelSpec
from pypto_tui.findings import cites

if TYPE_CHECKING:
    from pypto_tui.window import WindowPlan


def weights_forward(b: Builder, attr: str, shape: list[str], bias_shape: list[str] | None,
                     prefix: str = "") -> list[str]:
    """forward's only work on a module: its weight and bias (when `bias_shape` is given), detached
    and reshaped for the kernel (CONV.weights-from-module). Returns the names the kernel takes."""
    parts = [("weight", shape), *([("bias", bias_shape)] if bias_shape else [])]
    for tensor, target in parts:
        b.forward.prepare += [cst.parse_statement(
            f"{prefix}{tensor} = self.{attr}.{tensor}.detach().reshape({', '.join(target)}).contiguous()\n")]
    return [f"{prefix}{tensor}" for tensor, _ in parts]


def widen(src: str, nm: Names, ch: str) -> cst.BaseExpression:
    """`src` (ch, 1, 1) widened to one block, one axis per expand_clone."""
    if nm.nd == 1:
        return expr(f"pypto.expand_clone({src}, [{ch}, 1, ROWS])")
    return expr(f"pypto.expand_clone(pypto.expand_clone({src}, [{ch}, 1, UNIT]), [{ch}, ROWS, UNIT])")


# ------------------------------------------------------------------------------------ im2col
@cites("CONV.im2col", "CONV.transposed", "B.matmul-cube-tiles")
def im2col_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, win: Any, win4: Any, src: str,
                   unpack: Stmts) -> None:
    spec = plan.spec
    cube_m, cube_k, cube_n = b.cube_constants()
    taps = [f"TAP_{a}[t]" for a in nm.L]
    window = tap_window(b, plan, nm, "xq", "CG", "img * c + g * CG", taps, win, win4)
    setup: Stmts = tap_indices(b, plan, nm)
    if setup:
        setup.append(set_tile(tile))
    if spec.transposed:
        one_group = spec.groups == 1  # no concat of a single tensor (CONV.transposed)
        setup += b.tmpl("conv_transposed_weights_one_group" if one_group else "conv_transposed_weights", w=name("w"))
        weights, w_shape = "wt", ["IN_CHANNELS", "OCG", "TAPS"]
    else:
        weights, w_shape = "w", ["OUT_CHANNELS", "CG * TAPS"]
    block = nm.out_block("OCG")
    store: Stmts = b.tmpl("window_reshape", dst=name("y"), src=name("y"), shape=expr_list(block))
    if spec.bias:
        store += b.tmpl("conv_bias", widened=widen("pypto.view(b, [OCG, 1, 1], [g * OCG, 0, 0])", nm, "OCG"))
    store += b.tmpl("conv_store", value=expr("y + bias_block") if spec.bias else name("y"),
                    offsets=expr_list(nm.out_offsets("img * OUT_CHANNELS + g * OCG")), out=name("out"))
    body = b.tmpl("conv_im2col", cube_m=cube_m, cube_k=cube_k, cube_n=cube_n, tile=tile, setup=setup,
                  window=window, weights=name(weights), dt=b.pdtype(), store=store)
    extra = [f"UNIT = {nm.unit()}", "BLOCK = ROWS * UNIT", "ITEMS = n * GROUPS * BLOCKS"]
    inputs = [tensor_param("xq", nm.planes_shape(list(nm.q)), b), tensor_param("w", w_shape, b)]
    if spec.bias:
        inputs.append(tensor_param("b", ["OUT_CHANNELS", "1", "1"], b))
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(plan.nd), scalars=[], inputs=inputs,
        output=tensor_param("out", nm.out_shape("OUT_CHANNELS"), b), prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"{spec.describe()} as im2col (CONV.im2col{', CONV.transposed' if spec.transposed else ''}): per item "
             "(image, group) and block of output rows, the taps' windows are stacked into columns and one matmul "
             "with the group's weights writes the block (CONV.row-blocks)."),
    )
    b.add_kernel(kspec)
    params = weights_forward(b, str(spec.weight_attr), w_shape, ["OUT_CHANNELS", "1", "1"] if spec.bias else None)
    b.call_kernel(kspec, [src, *params])


@cites("CONV.flat-taps", "CONV.flat-phases", "CONV.im2col", "B.matmul-cube-tiles")
def flat_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, src: str, unpack: Stmts) -> None:
    """A 2-D stride-1 conv on flat planes (CONV.flat-taps): the kernel reads the prepared planes as
    (N*C, 1, QH*QW), so each tap's window over a block of ROWS output rows is one contiguous view of
    SPAN positions from (r0 + TAP_H)*QW + TAP_W; the stacked views go through one matmul and each of
    the block's rows is stored from the product at r*QW into the (N*OC, OH*OW) output."""
    spec = plan.spec
    cube_m, cube_k, cube_n = b.cube_constants()
    weights, w_shape = "w", ["OUT_CHANNELS", "CG * TAPS"]
    # a row is assembled as a computed tensor, never as a view of the product (CONV.assemble-whole:
    # the generated module with bare views failed Pass_26 from the second iteration on): the bias add
    # computes it, or + 0.0 when there is no bias
    bias: Stmts = b.tmpl("conv_flat_bias") if spec.bias else []
    pitch, length, start, offsets = _flat_reading(plan)
    body = b.tmpl("conv_flat_taps", cube_m=cube_m, cube_k=cube_k, cube_n=cube_n, tile=tile,
                  weights=name(weights), dt=b.pdtype(), bias=bias, row_plus=expr("bias_row" if spec.bias else "0.0"),
                  start=expr(start), pitch=name(pitch))
    extra = [*offsets, f"SPAN = (ROWS - 1) * {pitch} + OW", "ITEMS = n * GROUPS * BLOCKS"]
    inputs = [tensor_param("xf", ["n * c", "1", length], b), tensor_param("w", w_shape, b)]
    if spec.bias:
        inputs.append(tensor_param("b", ["OUT_CHANNELS", "1"], b))
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(plan.nd), scalars=[], inputs=inputs,
        output=tensor_param("out", ["n * OUT_CHANNELS", "OH * OW"], b), prelude=factory_prelude(unpack, extra),
        body=body,
        doc=(f"{spec.describe()} as an implicit matmul on flat planes (CONV.flat-taps): per item (image, group) "
             "and block of output rows, one contiguous view per tap of the planes read flat, stacked, one matmul "
             "with the group's weights, each output row stored from the product (CONV.row-blocks)."),
    )
    b.add_kernel(kspec)
    params = weights_forward(b, str(spec.weight_attr), w_shape, ["OUT_CHANNELS", "1"] if spec.bias else None)
    call_on_flat_planes(b, kspec, src, params, length)


def _flat_reading(plan: WindowPlan) -> tuple[str, str, str, list[str]]:
    """How the flat form reads its planes: the row pitch, the flat length of one (image, channel)
    plane, a tap's first position in it and the factory's lines that precompute it. Stride 1
    (CONV.flat-taps): the prepared plane, rows QW apart. Strided (CONV.flat-phases): the phase
    planes one after another, PH x PW each, so tap t starts in its phase's plane at TAP_AT[t]."""
    if not plan.phase_planes:
        return "QW", "QH * QW", "(r0 + TAP_H[t]) * QW + TAP_W[t]", []
    at = ("TAP_AT = [((TAP_H[t] % STRIDE[0]) * STRIDE[1] + TAP_W[t] % STRIDE[1]) * PH * PW"
          " + (TAP_H[t] // STRIDE[0]) * PW + TAP_W[t] // STRIDE[1] for t in range(TAPS)]")
    return "PW", "STRIDE[0] * STRIDE[1] * PH * PW", "r0 * PW + TAP_AT[t]", [at]


def call_on_flat_planes(b: Builder, kspec: KernelSpec, src: str, params: list[str],
                        length: str = "QH * QW") -> None:
    """forward's call of a flat-plane kernel (CONV.flat-taps, CONV.depthwise-flat, CONV.flat-phases):
    after the pre kernels' calls, the prepared planes read flat, a view, then the kernel."""
    b.forward.calls += [cst.parse_statement(f"flat = {src}.reshape(n * c, 1, {length})\n")]
    b.call_kernel(kspec, ["flat", *params])


@cites("CONV.depthwise-flat", "CONV.depthwise-taps", "CONV.assemble-whole")
def flat_depthwise_kernel(b: Builder, plan: WindowPlan, op: str, tile: Any, src: str, unpack: Stmts) -> None:
    """A 2-D stride-1 depthwise conv on flat planes (CONV.depthwise-flat): per image and block of
    ROWS output rows, each tap's window over all C planes is one contiguous (C, 1, SPAN) view of the
    planes read as (N*C, 1, QH*QW); the tap sum is vector work, and each of the block's rows is
    stored from it into the (N*C, 1, OH*OW) output."""
    spec = plan.spec
    bias: Stmts = b.tmpl("conv_depthwise_flat_bias") if spec.bias else []
    body = b.tmpl("conv_depthwise_flat", tile=tile, bias=bias,
                  row_plus=expr("bias_row" if spec.bias else "0.0"))
    extra = ["SPAN = (ROWS - 1) * QW + OW", "C = c", "ITEMS = n * BLOCKS"]
    inputs = [tensor_param("xf", ["n * c", "1", "QH * QW"], b), tensor_param("w", ["c", "TAPS", "1"], b)]
    if spec.bias:
        inputs.append(tensor_param("b", ["c", "1", "1"], b))
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(plan.nd), scalars=[], inputs=inputs,
        output=tensor_param("out", ["n * c", "1", "OH * OW"], b), prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"{spec.describe()} as a sum over the taps on flat planes (CONV.depthwise-flat): per image and block "
             "of output rows, one contiguous view per tap of all the image's planes, times the channels' tap "
             "weights, each output row stored from the sum (CONV.row-blocks)."),
    )
    b.add_kernel(kspec)
    params = weights_forward(b, str(spec.weight_attr), ["c", "TAPS", "1"], ["c", "1", "1"] if spec.bias else None)
    call_on_flat_planes(b, kspec, src, params)


# ------------------------------------------------------------------------------------ depthwise
@cites("CONV.depthwise-taps")
def depthwise_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, win: Any, win4: Any, src: str,
                      unpack: Stmts, out: str = "out") -> None:
    spec = plan.spec
    block = nm.out_block("1")
    taps = [f"TAP_{a}[t]" for a in nm.L]
    window = tap_window(b, plan, nm, "xq", "1", "plane", taps, win, win4)
    window += b.tmpl("window_reshape", dst=name("win"), src=name("win"), shape=expr_list(block))
    if plan.nd == 3:
        window.append(set_tile(win))
    store: Stmts = []
    if spec.bias:
        store += b.tmpl("conv_bias", widened=widen("pypto.view(b, [1, 1, 1], [ch, 0, 0])", nm, "1"))
    store += b.tmpl("conv_store", value=expr("acc + bias_block") if spec.bias else name("acc"),
                    offsets=expr_list(nm.out_offsets("plane")), out=name("out"))
    body = b.tmpl("conv_depthwise", tile=win, setup=tap_indices(b, plan, nm), window=window,
                  weight=widen("pypto.view(w, [1, 1, 1], [ch, t, 0])", nm, "1"), store=store)
    extra = [f"UNIT = {nm.unit()}", "C = c", "ITEMS = n * c * BLOCKS"]
    inputs = [tensor_param("xq", nm.planes_shape(list(nm.q)), b), tensor_param("w", ["c", "TAPS", "1"], b)]
    if spec.bias:
        inputs.append(tensor_param("b", ["c", "1", "1"], b))
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(plan.nd), scalars=[], inputs=inputs,
        output=tensor_param("out", nm.out_shape("c"), b), prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"{spec.describe()} as a sum over the taps (CONV.depthwise-taps): per item (one (image, channel) "
             "plane) and block of output rows (CONV.row-blocks)."),
    )
    b.add_kernel(kspec)
    params = weights_forward(b, str(spec.weight_attr), ["c", "TAPS", "1"],
                              ["OUT_CHANNELS", "1", "1"] if spec.bias else None)
    b.call_kernel(kspec, [src, *params], out=out)


# ------------------------------------------------------------------------------------ pointwise stage
@cites("CONV.pointwise-stage", "B.matmul-cube-tiles")
def pointwise_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, tile: Any, unpack: Stmts) -> None:
    """The 1x1 conv after a depthwise one (CONV.pointwise-stage): forward flattens the first kernel's
    output to (N*C, positions), and per image and block of output rows one matmul of the pointwise
    weights (OC2, C) with the block's (C, ROWS*UNIT) positions writes (OC2, ROWS*UNIT)."""
    p = plan.spec.pointwise
    assert p is not None
    lines = [f"PW_OUT_CHANNELS: the pointwise conv self.{p.attr} (1x1, {p.in_channels} -> {p.out_channels} "
             "channels) after the first conv, a matmul over the channels per image (CONV.pointwise-stage)."]
    b.add_constant(Constant("PW_OUT_CHANNELS", p.out_channels, lines, ("CONV.pointwise-stage",), {}))
    cube_m, cube_k, cube_n = b.cube_constants()
    positions = product(nm.o)
    store: Stmts = []
    if p.bias:
        store += b.tmpl("conv_bias", widened=expr("pypto.expand_clone(b, [PW_OUT_CHANNELS, BLOCK])"))
    store += b.tmpl("conv_store", value=expr("y + bias_block") if p.bias else name("y"),
                    offsets=expr_list(["img * PW_OUT_CHANNELS", "r0 * UNIT"]), out=name("out"))
    body = b.tmpl("conv_pointwise", cube_m=cube_m, cube_k=cube_k, cube_n=cube_n, tile=tile, dt=b.pdtype(),
                  store=store)
    extra = [f"UNIT = {nm.unit()}", "BLOCK = ROWS * UNIT", "C = c", "ITEMS = n * BLOCKS"]
    inputs = [tensor_param("mid", ["n * c", positions], b), tensor_param("w", ["PW_OUT_CHANNELS", "c"], b)]
    if p.bias:
        inputs.append(tensor_param("b", ["PW_OUT_CHANNELS", "1"], b))
    kspec = KernelSpec(
        factory=f"create_{op}_pointwise_kernel", kernel=f"{op}_pointwise_kernel", dims=dim_names(plan.nd), scalars=[],
        inputs=inputs, output=tensor_param("out", ["n * PW_OUT_CHANNELS", positions], b),
        prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"The pointwise conv self.{p.attr} on the first conv's output (CONV.pointwise-stage): per item (an "
             "image) and block of output rows (CONV.row-blocks), one matmul of the (OC2, C) weights with the "
             "block's (C, ROWS*UNIT) positions."),
    )
    b.add_kernel(kspec)
    b.forward.calls += b.fwd("mid = mid.reshape(n * c, {p})", p=expr(positions))
    params = weights_forward(b, p.attr, ["PW_OUT_CHANNELS", "c"], ["PW_OUT_CHANNELS", "1"] if p.bias else None,
                              prefix="pw_")
    b.call_kernel(kspec, ["mid", *params])
