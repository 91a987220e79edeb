"""argmax / argmin over one axis: `pypto.topk(x, 1, dim, largest)` (ARG.topk-last-axis).

pypto 0.2.0 has no argmax; topk with k = 1 gives the index of the largest (or, with
largest=False, the smallest) element, but only along the last axis (FC0000 on another one,
measured). For another axis the kernel transposes that axis last, takes the top 1 there and
transposes the indices back; one vec tile serves both layouts, so it is ranked on x with the
reduce axis where it is (the documents' 16 -> 32 -> 64 sweet spot keeps the tile square enough
for the transposes: (1, 16, 512) compiles on (2, 4096, 4095), (1, 4, 2048) does not). The
indices are int32; torch returns int64, so they are cast before
they are written, and verification compares them exactly in int64.

The kernel's output keeps the reduced axis (size 1); forward reshapes it to the baseline's
shape (P2.keepdim-direct). A loop, when auto_tiles needs one, runs along the outermost axis that
is not reduced, so every chunk holds whole rows of the reduction.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry

OPS = ("argmax", "argmin")


def loop_axis_for(axis: int, rank: int) -> int:
    """The outermost axis that is not reduced (0, or 1 when axis 0 is reduced)."""
    return 1 if axis == 0 and rank > 1 else 0


def arg_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The tile is ranked on x as it is stored, reduced along the contract's axis (the documents'
    16 -> 32 -> 64 along a middle axis keeps the two transposes cheap, measured); ops.toml gives
    topk's live buffers. The loop runs along the outermost axis that is not reduced."""
    base = main_tile_needs(c, dims, g, kb)
    axis = dims.reduce_axis if dims.reduce_axis is not None else len(g.shape) - 1
    loop = loop_axis_for(axis, len(g.shape))
    note = f"axis {axis} is reduced, so the loop runs along axis {loop}, where chunks hold whole rows" if loop else ""
    return replace(base, loop_axis=loop, loop_note=note)


@cites("ARG.topk-last-axis", "P2.keepdim-direct")
def build_argreduce(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS:
        raise Unsupported(f"'{c.op}' is not argmax or argmin")
    if c.op_args.get("fused") or c.op_args.get("operand_expr") or len(c.operands) != 1:
        raise Unsupported(c.reason or "an arg-reduction of an expression is not scaffolded")
    dims_plan = ctx.dims
    axis = dims_plan.reduce_axis
    if dims_plan.reshape != "keep" or axis is None or ctx.geometry is None or ctx.main is None:
        raise Unsupported(f"{c.op} over the whole tensor (no dim) is not scaffolded: give it a dim")
    x = c.operands[0].name
    shape = ctx.geometry.shape
    rank = len(shape)
    last = rank - 1
    dims = [f"d{i}" for i in range(rank)]
    out_shape: tuple[str | int, ...] = tuple(1 if i == axis else d for i, d in enumerate(dims))
    largest = c.op == "argmax"
    loop = ctx.loop
    loop_x = loop_axis_for(axis, rank)
    if loop is not None and rank == 1:
        raise Unsupported(f"{c.op} of a 1-D tensor this long needs a loop along the reduced axis: not scaffolded")
    b.pattern = "argreduce"
    moved = "" if axis == last else f", axis {axis} transposed last and back"
    b.summary = (f"{c.op} over axis {axis} with pypto.topk(k=1){moved}, int32 indices cast to int64"
                 + (f", looping along axis {loop_x}" if loop else ""))
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    int64 = Ex.raw(b.pdtype(c.output_dtype or "int64"), False)

    def seen(t: Ex) -> Ex:
        return t if axis == last else call("transpose", t, axis, last)

    indices = seen(Ex.name("indices"))
    common = {"dim": Ex.num(last), "largest": Ex.raw(b.expr(str(largest)), False),
              "indices": call("cast", indices, int64), "out": name("out")}
    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("argreduce", tile=tile, x=seen(Ex.name(x)), **common)
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            offsets = b.chunk_offsets(rank, loop_x, off)
            return b.tmpl("argreduce_step", views=b.view(chunk, x, b.chunk_shape(dims, loop_x, size), offsets),
                          x=seen(Ex.name(chunk)), offsets=dims_list(offsets), **common)

        prelude, body = b.chunked_loop(dims[loop_x], step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", out_shape, c.output_dtype or "int64"), prelude=prelude, body=body,
        doc=f"{c.op} over axis {axis} (ARG.topk-last-axis): the top 1 along the last axis{moved}; one kernel for "
            "this fixed dim (P1.single-dim-kernel).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, rank)
    xn = b.prepare(x, None, "")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    keepdim = bool(c.reduction.keepdim) if c.reduction else False
    b.forward.result = b.reduced_result(x, [1 if i == axis else s for i, s in enumerate(shape)], keepdim)


PATTERNS = (Pattern("argreduce", ("reduction",), build_argreduce, ("ARG.topk-last-axis",), ops=OPS,
                    needs=arg_needs),)
