"""Softmax / log-softmax and single-axis reductions with the chosen tile.

The kernel keeps the input's rank (P3.rank-strategy) or, for a multi-axis reduction, the rank
after the forward merged the adjacent reduce axes (O3.merge-reduce-axes); it then reduces one
axis with one call (API.single-dim-reduce): `sum`, `amax`, `amin`, and `mean` as `sum * (1/count)`.
keepdim is the baseline's (P2.keepdim-direct). A loop, when auto_tiles needs one, runs along
axis 0, or along axis 1 when axis 0 is the reduced one (a reduction's loop never runs along its
reduced axis: that would need an accumulator).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, literal, name
from pypto_tui.codegen.expr import Ex, mean, reduce
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs

COLUMNS_PRAGMA = ("# pypto-lint: ignore[lint.loop_axis]  a reduction over axis 0 loops along axis 1: chunks of "
                  "columns, each reduced whole")
_OPS = {"sum": "sum", "mean": "mean", "max": "amax", "amax": "amax", "min": "amin", "amin": "amin"}


def _dims(rank: int) -> list[str]:
    return [f"d{i}" for i in range(rank)]


def _loop_axis_ok(b: Builder, axis: int, what: str) -> None:
    if axis == 0:
        raise Unsupported(f"{what} reduces axis 0 and needs a loop (auto_tiles over the limit): a loop along "
                          "the reduced axis needs an accumulator; not scaffolded")


def _prepare_input(b: Builder, x: str) -> str:
    dims = b.ctx.dims
    if dims.reshape in ("merge_reduce", "keep") and dims.forward_reshape and dims.forward_reshape[0] is not None:
        return b.prepare(x, b.reshape_args(x, dims.axis_map), "merged")
    return b.prepare(x, None, "")


def _reduction_loop_axis(axis: int, rank: int) -> int:
    """Axis 0, unless the reduction is over it: then axis 1, each chunk of columns reduced whole
    over axis 0 (a loop along the reduced axis would need an accumulator carried between
    iterations). BatchNorm1d's batch mean over (B, F) is this case."""
    return 1 if axis == 0 and rank >= 2 else 0


def reduction_needs(c: Any, dims: Any, g: Any, kb: Any) -> Needs:
    """The main tile and a loop along `_reduction_loop_axis` (the pack's `loop_axis` wins)."""
    n = main_tile_needs(c, dims, g, kb)
    if g.reduce_dim is None or kb.op_data(c.op).loop_axis is not None:
        return n
    axis = _reduction_loop_axis(g.reduce_dim, len(g.shape))
    return replace(n, loop_axis=axis) if axis != n.loop_axis else n


@cites("O1.contiguous-1kb", "O1.reduce-sweet-spot", "P2.keepdim-direct")
def build_softmax(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in ("softmax", "log_softmax"):
        raise Unsupported(f"'{c.op}' is not softmax or log_softmax")
    if c.op_args.get("fused") or len(c.operands) != 1:
        raise Unsupported(c.reason or "softmax of an expression is not scaffolded")
    if ctx.dims.reshape != "keep" or ctx.dims.reduce_axis is None or ctx.geometry is None or ctx.tile is None:
        raise Unsupported("softmax keeps the input's rank and reduces one axis; this dimension plan does not")
    x = c.operands[0].name
    shape = ctx.geometry.shape
    rank = len(shape)
    axis = ctx.dims.reduce_axis
    dims = _dims(rank)
    loop = ctx.loop_count is not None
    b.pattern = "softmax"
    b.summary = f"{c.op} over axis {axis} with the chosen tile" + (", looping along axis 0" if loop else "")
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, f"{x}", loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    prelude: Stmts = []
    template = c.op
    if not loop:
        body = b.tmpl(template, tile=tile, x=name(x), dim=literal(axis), out=name("out"))
    else:
        _loop_axis_ok(b, axis, c.op)

        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl(f"{template}_step", views=b.view(chunk, x, b.chunk_shape(dims, 0, size),
                                                            b.chunk_offsets(rank, 0, off)),
                          x=name(chunk), dim=literal(axis), offsets=dims_list(b.chunk_offsets(rank, 0, off)),
                          out=name("out"))

        prelude, body = b.chunked_loop("d0", step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", tuple(dims), c.output_dtype or ctx.dtype),
        prelude=prelude, body=body,
        doc=f"{c.op} over axis {axis} (one kernel for this fixed dim, P1.single-dim-kernel); "
            "shapes are closure constants (P1.static-shape).",
    )
    b.call_as_laid_out(spec, x, dims)


@cites("API.single-dim-reduce", "O3.merge-reduce-axes", "P2.keepdim-direct")
def build_reduction(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    r = c.reduction
    if r is None:
        raise Unsupported("the contract has no reduction")
    op = _OPS.get(c.op or "") or _OPS.get(r.op)
    if op is None:
        raise Unsupported(f"'{c.op}' has no single-call pypto reduction (sum, mean, amax, amin are scaffolded)")
    if c.op_args.get("returns") == "values+indices":
        raise Unsupported("the baseline returns values and indices; pypto has no argmax here")
    if c.op_args.get("fused") or c.op_args.get("operand_expr") or len(c.operands) != 1:
        raise Unsupported(c.reason or "a reduction of an expression is not scaffolded")
    dims_plan = ctx.dims
    if dims_plan.reshape not in ("keep", "merge_reduce") or dims_plan.reduce_axis is None:
        raise Unsupported("this dimension plan does not reduce a single kernel axis")
    if len(dims_plan.reduce_axes) != 1:
        raise Unsupported(f"the kernel would reduce axes {dims_plan.reduce_axes} one at a time: merge them in "
                          "forward first (O3), or reduce one axis")
    if ctx.geometry is None or ctx.tile is None or dims_plan.output_kernel_shape is None:
        raise Unsupported("no tile for this reduction")
    x = c.operands[0].name
    shape = ctx.geometry.shape
    rank = len(shape)
    axis = dims_plan.reduce_axis
    keepdim = bool(r.keepdim)
    dims = _dims(rank)
    out_dims = [("1" if keepdim else None) if i == axis else d for i, d in enumerate(dims)]
    out_shape: tuple[str | int, ...] = tuple(1 if d == "1" else d for d in out_dims if d is not None) or (1,)
    loop = ctx.loop_count is not None
    merged = dims_plan.reshape == "merge_reduce"
    b.pattern = "reduction"
    la = ctx.loop.axis if ctx.loop is not None else 0  # the loop plan's axis (reduction_needs chose it)
    along = f", looping along axis {la}" if loop else ""
    b.summary = (f"{c.op} over axis {axis}" + (" (the merged reduce axes)" if merged else "")
                 + f", keepdim={keepdim}" + along)
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    prelude: Stmts = []
    inv = None
    if op == "mean":
        prelude += b.fwd("INV_COUNT = 1.0 / {d}", d=name(dims[axis]))
        inv = Ex.name("INV_COUNT", tensor=False)

    def value(src: Ex) -> Ex:
        if op == "mean":
            assert inv is not None
            return mean(src, axis, keepdim, inv)
        return reduce(op, src, axis, keepdim)

    if not loop:
        body = b.tmpl("reduce", tile=tile, out=name("out"), value=value(Ex.name(x)))
    else:
        if la == axis:
            _loop_axis_ok(b, axis, c.op or "the reduction")
        out_rank = len(out_shape)
        out_la = la if keepdim or la < axis else la - 1  # the loop's axis in the output

        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl("reduce_step", views=b.view(chunk, x, b.chunk_shape(dims, la, size),
                                                      b.chunk_offsets(rank, la, off),
                                                      pragma=COLUMNS_PRAGMA if la else None),
                          value=value(Ex.name(chunk)), offsets=dims_list(b.chunk_offsets(out_rank, out_la, off)),
                          out=name("out"))

        loop_prelude, body = b.chunked_loop(dims[la], step, setup=b.tmpl("vec_setup", tile=tile))
        prelude += loop_prelude
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", out_shape, c.output_dtype or ctx.dtype),
        prelude=prelude, body=body,
        doc=f"{c.op} over axis {axis}, keepdim={keepdim} (one kernel for this fixed dim, P1.single-dim-kernel)"
            + ("; mean = sum * (1/count) (API.single-dim-reduce)" if op == "mean" else "") + ".",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or shape))
    xn = _prepare_input(b, x)
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    b.forward.result = b.reduced_result(x, dims_plan.output_kernel_shape, keepdim)


PATTERNS = (
    Pattern("softmax", ("softmax",), build_softmax),
    Pattern("reduction", ("reduction",), build_reduction, needs=reduction_needs),
)
