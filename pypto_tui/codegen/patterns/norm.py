"""Pattern C: normalisations, each with the layout and loop the documents give it (C.norm-loop).

- GroupNorm / InstanceNorm / LayerNorm: forward reshapes to (rows, hidden) (groups: rows =
  N * G); statistics per row with var = E[x^2] - mean^2; the loop runs along the rows.
- RMSNorm over the channel axis: (B, C, S); mean of squares over axis 1; the loop runs along B.
- BatchNorm (training-mode statistics): (B, C, S); per channel over B and S; the loop runs
  along the channel axis, as the documents prescribe (the view's offset moves axis 1, so the
  view line carries a `pypto-lint: ignore` for the outermost-axis lint rule, with the reason).

Affine parameters are the nn defaults at init (weight 1, bias 0), i.e. the identity, and are
not applied; running statistics are not updated (the output is what the baseline returns).
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, dims_list, literal, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam, Unsupported
from pypto_tui.findings import cites

# x, the expanded scale, the expanded shift and the result live in the unified buffer together;
# measured with pypto 0.2.0: (1, 1, 16384) fp32 fails in SIM on (16, 64, 65536), (1, 1, 8192) builds.
BN_LIVE_BUFFERS = 4
# A row norm holds x, x*x, x - mean and the broadcast rsqrt at once. Measured with pypto 0.2.0:
# with a (1, 16384) fp32 tile, Pass_36_CodegenPreproc spills the row statistics and the
# interpreter cannot run the copy back (FB4001 at COPY_IN), so that pass is never verified;
# (1, 8192) verifies every pass (fp16 at 16384 elements does too).
ROW_NORM_LIVE_BUFFERS = 4
LOOP_NOTE = "handled by the pypto.loop below (LOOP_COUNT)"
BN_PRAGMA = "# pypto-lint: ignore[lint.loop_axis]  C.norm-loop: BatchNorm loops along the channel axis"


def _eps(b: Builder, default: float = 1e-5) -> Scalar:
    c = b.ctx.contract
    value = c.op_args.get("eps", default)
    if value is None:
        value = default
    return b.scalar("eps", float(value), init_key=b.ctx.task.op_arg_source(c.op or "", "eps"))


@cites("C.norm-loop")
def build_norm(b: Builder) -> None:
    c = b.ctx.contract
    if c.op in ("group_norm", "instance_norm", "layer_norm"):
        _row_norm(b)
    elif c.op == "rms_norm":
        _rms_norm(b)
    elif c.op == "batch_norm":
        _batch_norm(b)
    else:
        raise Unsupported(f"the norm '{c.op}' has no scaffold (group, instance, layer, RMS and batch norms do)")


def _common_checks(b: Builder) -> str:
    c = b.ctx.contract
    if len(c.operands) != 1 or c.op_args.get("fused"):
        raise Unsupported(c.reason or "a norm of an expression is not scaffolded")
    for key in ("weight", "bias", "running_mean", "running_var"):
        if c.op_args.get(key) is not None and not isinstance(c.op_args.get(key), bool):
            raise Unsupported(f"the norm takes a '{key}' tensor: only the nn defaults at init are scaffolded")
    if b.ctx.geometry is None or b.ctx.tile is None:
        raise Unsupported("no tile for this norm")
    return str(c.operands[0].name)


def _row_norm(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    x = _common_checks(b)
    assert ctx.geometry is not None and ctx.tile is not None
    if ctx.dims.reshape not in ("groups", "rows") or len(ctx.geometry.shape) != 2:
        raise Unsupported(f"{c.op} needs the (rows, hidden) layout; the dimension plan gives {ctx.dims.reshape}")
    shape = ctx.geometry.shape
    eps = _eps(b)
    loop = ctx.loop_count is not None
    b.pattern = "C"
    b.summary = f"Pattern C: {c.op} on (rows, hidden) = {shape}" + (", looping along the rows" if loop else "")
    tile = b.tile_constant("TILE_SHAPE", shape, ctx.tile, 1, "the (rows, hidden) input",
                           loop_note=LOOP_NOTE if loop else None, live_buffers=ROW_NORM_LIVE_BUFFERS)
    prelude = b.fwd("INV_HIDDEN = 1.0 / hidden")
    inv = Ex.name("INV_HIDDEN", tensor=False)
    eps_e = Ex.name("eps", tensor=False)
    if not loop:
        body = b.tmpl("row_norm", tile=tile, x=name(x), inv_hidden=inv, eps=eps_e, out=name("out"))
    else:
        count = b.loop_constant(shape, ctx.tile, 0, b.why())
        prelude += b.loop_prelude("rows", count)

        def step(size: str, off: str, suffix: str) -> list:
            chunk = f"{x}_{suffix}"
            return b.tmpl("row_norm_step", views=b.view(chunk, x, [size, "hidden"], [off, 0]), x=name(chunk),
                          inv_hidden=inv, eps=eps_e, offsets=dims_list([off, 0]), out=name("out"))

        body = b.tmpl("vec_setup", tile=tile) + b.loop("bi", "ROW_LOOP", step("BASIC_BATCH", "off", "chunk"),
                                                     step("TAIL", "TAIL_OFFSET", "tail"))
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=["rows", "hidden"], scalars=[eps],
        inputs=[TensorParam(x, ("rows", "hidden"), ctx.dtype)],
        output=TensorParam("out", ("rows", "hidden"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"Pattern C (C.norm-loop): {c.op} per row of (rows, hidden); var = E[x^2] - mean^2; "
            "affine weight 1 / bias 0 (nn defaults at init) are the identity.",
    )
    b.add_kernel(spec)
    rank = len(c.operands[0].shape or ())
    b.assert_rank(x, rank)
    if c.op == "group_norm":
        g = c.op_args.get("num_groups")
        prov = ctx.task.provenance
        groups = b.expr("self.{p}", p=name(prov["num_groups"])) if "num_groups" in prov else literal(int(g or 1))
        b.assert_expr(b.expr("{x}.shape[1] % {g} == 0", x=name(x), g=groups), "channels must split into the groups")
        for key in ("num_channels", "num_features"):
            if key in prov:
                b.assert_expr(b.expr("{x}.shape[1] == self.{p}", x=name(x), p=name(prov[key])),
                              "channels differ from the model's")
                break
        xn = b.prepare(x, [b.expr("{x}.shape[0] * {g}", x=name(x), g=groups), b.expr("-1")], "rows")
    elif c.op == "instance_norm":
        xn = b.prepare(x, [b.expr("{x}.shape[0] * {x}.shape[1]", x=name(x)), b.expr("-1")], "rows")
    else:
        reshape = ctx.dims.forward_reshape[0] if ctx.dims.forward_reshape else None
        args = b.reshape_args(x, ctx.dims.axis_map) if reshape is not None else None
        xn = b.prepare(x, args, "rows")
    b.unpack_dims(xn, ["rows", "hidden"])
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x))


def _rms_norm(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    x = _common_checks(b)
    assert ctx.geometry is not None and ctx.tile is not None
    shape = ctx.geometry.shape
    if ctx.dims.reduce_axis != 1 or len(shape) not in (2, 3):
        raise Unsupported("RMSNorm is scaffolded over the channel axis 1 of (B, C) or (B, C, S)")
    rank = len(shape)
    dims = ["batch", "channels", "spatial"][:rank]
    eps = _eps(b)
    loop = ctx.loop_count is not None
    b.pattern = "C"
    b.summary = f"Pattern C: RMSNorm over the channel axis of {shape}" + (", looping along the batch" if loop else "")
    tile = b.tile_constant("TILE_SHAPE", shape, ctx.tile, 1, "the (B, C, S) input",
                           loop_note=LOOP_NOTE if loop else None)
    prelude = b.fwd("INV_CHANNELS = 1.0 / channels")
    inv = Ex.name("INV_CHANNELS", tensor=False)
    eps_e = Ex.name("eps", tensor=False)
    if not loop:
        body = b.tmpl("rms_norm", tile=tile, x=name(x), inv_channels=inv, eps=eps_e, out=name("out"))
    else:
        count = b.loop_constant(shape, ctx.tile, 0, b.why())
        prelude += b.loop_prelude("batch", count)

        def step(size: str, off: str, suffix: str) -> list:
            chunk = f"{x}_{suffix}"
            return b.tmpl("rms_norm_step", views=b.view(chunk, x, b.chunk_shape(dims, 0, size),
                                                        b.chunk_offsets(rank, 0, off)),
                          x=name(chunk), inv_channels=inv, eps=eps_e,
                          offsets=dims_list(b.chunk_offsets(rank, 0, off)), out=name("out"))

        body = b.tmpl("vec_setup", tile=tile) + b.loop("bi", "BATCH_LOOP", step("BASIC_BATCH", "off", "chunk"),
                                                     step("TAIL", "TAIL_OFFSET", "tail"))
    spec = KernelSpec(
        factory="create_rms_norm_kernel", kernel="rms_norm_kernel", dims=dims, scalars=[eps],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", tuple(dims), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc="Pattern C (C.norm-loop): x * rsqrt(mean(x^2 over the channels) + eps) on (B, C, S).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or shape))
    prov = ctx.task.provenance
    if "num_features" in prov:
        b.assert_expr(b.expr("{x}.shape[1] == self.{p}", x=name(x), p=name(prov["num_features"])),
                      "channels differ from the model's")
    reshape = ctx.dims.forward_reshape[0] if ctx.dims.forward_reshape else None
    xn = b.prepare(x, b.reshape_args(x, ctx.dims.axis_map), "bcs") if reshape is not None else b.prepare(x, None, "")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x)) if reshape is not None else name("out")


def _batch_norm(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    x = _common_checks(b)
    if not c.op_args.get("training", True):
        raise Unsupported("BatchNorm in eval mode (running statistics) is not scaffolded; training mode is")
    assert ctx.geometry is not None and ctx.tile is not None
    shape = ctx.geometry.shape
    if len(shape) != 3 or sorted(ctx.dims.reduce_axes) != [0, 2]:
        raise Unsupported("BatchNorm is scaffolded on (B, C, S) with statistics over B and S")
    dims = ["batch", "channels", "spatial"]
    eps = _eps(b)
    loop = ctx.loop_count is not None
    b.pattern = "C"
    b.summary = (f"Pattern C: BatchNorm (training statistics) on (B, C, S) = {shape}"
                 + (", looping along the channel axis" if loop else ""))
    tile = b.tile_constant("TILE_SHAPE", shape, ctx.tile, ctx.dims.reduce_axis, "the (B, C, S) input",
                           loop_note=LOOP_NOTE.replace("loop", "loop along the channels") if loop else None,
                           live_buffers=BN_LIVE_BUFFERS)
    tile_value = b.constants[-1].value
    prelude = b.fwd("INV_COUNT = 1.0 / (batch * spatial)")
    inv = Ex.name("INV_COUNT", tensor=False)
    eps_e = Ex.name("eps", tensor=False)
    if not loop:
        body = b.tmpl("batch_norm", tile=tile, x=name(x), inv_count=inv, eps=eps_e,
                      stat_shape=dims_list([1, "channels", "spatial"]), out=name("out"))
    else:
        count = b.loop_constant(shape, tile_value, 1, b.why(), "the documents loop BatchNorm along C")
        prelude += b.loop_prelude("channels", count)

        def step(size: str, off: str, suffix: str) -> list:
            chunk = f"{x}_{suffix}"
            return b.tmpl("batch_norm_step", views=b.view(chunk, x, ["batch", size, "spatial"], [0, off, 0],
                                                          pragma=BN_PRAGMA),
                          x=name(chunk), inv_count=inv, eps=eps_e, stat_shape=dims_list([1, size, "spatial"]),
                          offsets=dims_list([0, off, 0]), out=name("out"))

        body = b.tmpl("vec_setup", tile=tile) + b.loop("ci", "CHANNEL_LOOP", step("BASIC_BATCH", "off", "chunk"),
                                                     step("TAIL", "TAIL_OFFSET", "tail"))
    spec = KernelSpec(
        factory="create_batch_norm_kernel", kernel="batch_norm_kernel", dims=dims, scalars=[eps],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", tuple(dims), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc="Pattern C (C.norm-loop): BatchNorm with training-mode statistics per channel over batch and spatial "
            "(biased variance); affine weight 1 / bias 0 (nn defaults at init) are the identity.",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or shape))
    prov = ctx.task.provenance
    if "num_features" in prov:
        b.assert_expr(b.expr("{x}.shape[1] == self.{p}", x=name(x), p=name(prov["num_features"])),
                      "channels differ from the model's")
    xn = b.prepare(x, b.reshape_args(x, ctx.dims.axis_map), "bcs")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x))
