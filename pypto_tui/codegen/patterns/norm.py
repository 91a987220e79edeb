"""Pattern C: normalisations, each with the layout and loop the documents give it (C.norm-loop).

- GroupNorm / InstanceNorm / LayerNorm: forward reshapes to (rows, hidden) (groups: rows =
  N * G); statistics per row in two passes (mean, then the mean square of x - mean); the loop runs along the rows.
- RMSNorm over the channel axis: (B, C, S); mean of squares over axis 1; the loop runs along B.
- BatchNorm (training-mode statistics): (B, C, S); per channel over B and S; the loop runs
  along the channel axis, as the documents prescribe (the view's offset moves axis 1, so the
  view line carries a `pypto-lint: ignore` for the outermost-axis lint rule, with the reason).

Affine parameters are the nn defaults at init (weight 1, bias 0), i.e. the identity, and are
not applied; running statistics are not updated (the output is what the baseline returns).
"""

from __future__ import annotations

from collections.abc import Callable

from pypto_tui.codegen.builder import Builder, Step, Stmts, dims_list, literal, name
from pypto_tui.codegen.expr import Ex, call, reduce
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

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
    elif c.op in ("l1_norm", "l2_norm"):
        _vector_norm(b)
    else:
        raise Unsupported(f"the norm '{c.op}' has no scaffold (group, instance, layer, RMS, batch, L1 and L2 norms "
                          "do)")


def _looped(b: Builder, prelude: Stmts, total: str, step: Step, idx: str, loop_name: str,
            tile: Ex) -> tuple[Stmts, Stmts]:
    loop_prelude, body = b.chunked_loop(total, step, idx, loop_name, setup=b.tmpl("vec_setup", tile=tile))
    return prelude + loop_prelude, body


def _statistics_body(b: Builder, x: str, template: str, dims: list[str], inv_name: str, count_dim: str,
                     summary: str, loop_total: str, loop_name: str, what: str,
                     values: Callable[[Ex], dict[str, Ex]] | None = None) -> tuple[Stmts, Stmts]:
    """(prelude, body) of a norm whose statistics run over axis 1: the tile, 1/count, and the body
    whole or as the plan's loop along axis 0 (each chunk holds whole rows, so no carry).
    `values(x)` adds placeholders computed on the (chunk of) x the body reads."""
    ctx = b.ctx
    loop = ctx.loop is not None
    b.pattern = "C"
    along = {"rows": "the rows", "batch": "the batch"}.get(loop_total, loop_total)
    b.summary = summary + (f", looping along {along}" if loop else "")
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, what, loop_note=LOOP_NOTE if loop else None)
    prelude = b.fwd("{inv} = 1.0 / {n}", inv=name(inv_name), n=name(count_dim))
    inv_key = f"inv_{count_dim}"
    common = {"eps": Ex.name("eps", tensor=False), inv_key: Ex.name(inv_name, tensor=False), "out": name("out")}
    extra = values or (lambda _x: {})
    if not loop:
        return prelude, b.tmpl(template, tile=tile, x=name(x), **common, **extra(Ex.name(x)))
    rank = len(dims)

    def step(size: str, off: str, suffix: str) -> Stmts:
        chunk = f"{x}_{suffix}"
        offsets = b.chunk_offsets(rank, 0, off)
        return b.tmpl(f"{template}_step", views=b.view(chunk, x, b.chunk_shape(dims, 0, size), offsets),
                      x=name(chunk), offsets=dims_list(offsets), **common, **extra(Ex.name(chunk)))

    return _looped(b, prelude, loop_total, step, "bi", loop_name, tile)


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
    prelude, body = _statistics_body(b, x, "row_norm", ["rows", "hidden"], "INV_HIDDEN", "hidden",
                                     f"Pattern C: {c.op} on (rows, hidden) = {shape}", "rows", "ROW_LOOP",
                                     "the (rows, hidden) input")
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=["rows", "hidden"], scalars=[eps],
        inputs=[TensorParam(x, ("rows", "hidden"), ctx.dtype)],
        output=TensorParam("out", ("rows", "hidden"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"Pattern C (C.norm-loop): {c.op} per row of (rows, hidden); two-pass variance; "
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


@cites("C.vector-norm")
def _vector_norm(b: Builder) -> None:
    """L1 / L2 normalisation of rows: x / statistic, the statistic per row (sum |x|, its mean, or
    sqrt(sum x^2)), plus eps when the contract adds one, or at least eps (F.normalize's clamp)."""
    ctx = b.ctx
    c = ctx.contract
    x = _common_checks(b)
    assert ctx.geometry is not None
    if ctx.dims.reshape != "rows" or len(ctx.geometry.shape) != 2:
        raise Unsupported(f"{c.op} is scaffolded over the trailing axes, as (rows, hidden); this plan gives "
                          f"{ctx.dims.reshape}")
    a = c.op_args
    eps_value = float(a.get("eps") or 0.0)
    clamp = bool(a.get("clamp_eps"))
    scalars = [_eps(b, 1e-12 if clamp else 0.0)] if (eps_value or clamp) else []
    eps = Ex.name("eps", tensor=False)
    mean = bool(a.get("mean"))
    inv = Ex.name("INV_HIDDEN", tensor=False)

    def stat(v: Ex) -> Ex:
        if c.op == "l1_norm":
            s = reduce("sum", call("abs", v), 1, True)
            s = s * inv if mean else s
        else:
            s = call("sqrt", reduce("sum", v * v, 1, True))
        if clamp:
            return call("maximum", s, eps)
        return s + eps if scalars else s

    what = {"l1_norm": "mean |x|" if mean else "sum |x|", "l2_norm": "sqrt(sum x^2)"}[c.op or ""]
    prelude, body = _statistics_body(b, x, "vector_norm", ["rows", "hidden"], "INV_HIDDEN", "hidden",
                                     f"Pattern C: {c.op}, x / {what} per row of (rows, hidden) = "
                                     f"{ctx.geometry.shape}", "rows", "ROW_LOOP", "the (rows, hidden) input",
                                     values=lambda v: {"value": v / stat(v)})
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=["rows", "hidden"], scalars=scalars,
        inputs=[TensorParam(x, ("rows", "hidden"), ctx.dtype)],
        output=TensorParam("out", ("rows", "hidden"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"Pattern C (C.vector-norm): {c.formula or c.op}.",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or ()))
    reshape = ctx.dims.forward_reshape[0] if ctx.dims.forward_reshape else None
    xn = b.prepare(x, b.reshape_args(x, ctx.dims.axis_map) if reshape is not None else None, "rows")
    b.unpack_dims(xn, ["rows", "hidden"])
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x)) if reshape is not None else name("out")


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
    prelude, body = _statistics_body(b, x, "rms_norm", dims, "INV_CHANNELS", "channels",
                                     f"Pattern C: RMSNorm over the channel axis of {shape}", "batch", "BATCH_LOOP",
                                     "the (B, C, S) input")
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
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, "the (B, C, S) input",
                           loop_note=LOOP_NOTE.replace("loop", "loop along the channels") if loop else None)
    prelude = b.fwd("INV_COUNT = 1.0 / (batch * spatial)")
    inv = Ex.name("INV_COUNT", tensor=False)
    eps_e = Ex.name("eps", tensor=False)
    if not loop:
        body = b.tmpl("batch_norm", tile=tile, x=name(x), inv_count=inv, eps=eps_e,
                      stat_shape=dims_list([1, "channels", "spatial"]), out=name("out"))
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl("batch_norm_step", views=b.view(chunk, x, ["batch", size, "spatial"], [0, off, 0],
                                                          pragma=BN_PRAGMA),
                          x=name(chunk), inv_count=inv, eps=eps_e, stat_shape=dims_list([1, size, "spatial"]),
                          offsets=dims_list([0, off, 0]), out=name("out"))

        prelude, body = _looped(b, prelude, "channels", step, "ci", "CHANNEL_LOOP", tile)
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


PATTERNS = (Pattern("C", ("norm",), build_norm, ("C.norm-loop", "C.vector-norm")),)
