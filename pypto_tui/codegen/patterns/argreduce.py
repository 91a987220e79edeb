"""argmax / argmin over one axis: `pypto.topk(x, 1, dim, largest)` (ARG.topk-last-axis).

pypto 0.2.0 has no argmax; topk with k = 1 gives the index of the largest (or, with
largest=False, the smallest) element, but only along the last axis (FC0000 on another one,
measured). Another axis is not transposed last (topk between two transposes computes the right
indices, but pass-verify writes no row for Pass_04, Pass_14 and Pass_17, so it is never
verified): the kernel takes the extreme along the axis and the first position holding it, the
positions counted by cumsum(ones) (ARG.first-match), which verifies every pass. The indices are
cast to torch's int64, and verification compares them exactly in int64.

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


@cites("ARG.topk-last-axis", "ARG.first-match", "P2.keepdim-direct")
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
    loop_x = loop.axis if loop is not None else 0  # the loop step's axis (arg_needs asked for it)
    if loop is not None and rank == 1:
        raise Unsupported(f"{c.op} of a 1-D tensor this long needs a loop along the reduced axis: not scaffolded")
    b.pattern = "argreduce"
    moved = ""
    b.summary = (f"{c.op} over axis {axis} with pypto.topk(k=1), int32 indices cast to int64" if axis == last else
                 f"{c.op} over axis {axis}: the first position of the {'largest' if largest else 'smallest'} value, "
                 "positions from cumsum(ones), cast to int64") + (f", looping along axis {loop_x}" if loop else "")
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    int64 = Ex.raw(b.pdtype(c.output_dtype or "int64"), False)

    prelude: Stmts = []
    if axis != last:  # ARG.first-match: topk's transposes leave 3 passes unchecked (measured)
        first = {"dim": Ex.num(axis), "extreme": Ex.raw(b.expr("pypto.amax" if largest else "pypto.amin"), False),
                 "size": Ex.raw(b.expr(f"float({dims[axis]})"), False), "int64": int64, "out": name("out")}
        if loop is None:
            body = b.tmpl("argreduce_first", tile=tile, x=Ex.name(x), shape=dims_list(dims), **first)
        else:
            def first_step(size: str, off: str, suffix: str) -> Stmts:
                chunk = f"{x}_{suffix}"
                offsets = b.chunk_offsets(rank, loop_x, off)
                shape = b.chunk_shape(dims, loop_x, size)
                return b.tmpl("argreduce_first_step", views=b.view(chunk, x, shape, offsets), x=Ex.name(chunk),
                              shape=dims_list(shape), offsets=dims_list(offsets), **first)

            prelude, body = b.chunked_loop(dims[loop_x], first_step, setup=b.tmpl("vec_setup", tile=tile))
        _finish(b, c, x, dims, out_shape, shape, axis, prelude, body, "ARG.first-match", moved)
        return
    common = {"dim": Ex.num(last), "largest": Ex.raw(b.expr(str(largest)), False),
              "indices": call("cast", Ex.name("indices"), int64), "out": name("out")}
    if loop is None:
        body = b.tmpl("argreduce", tile=tile, x=Ex.name(x), **common)
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            offsets = b.chunk_offsets(rank, loop_x, off)
            return b.tmpl("argreduce_step", views=b.view(chunk, x, b.chunk_shape(dims, loop_x, size), offsets),
                          x=Ex.name(chunk), offsets=dims_list(offsets), **common)

        prelude, body = b.chunked_loop(dims[loop_x], step, setup=b.tmpl("vec_setup", tile=tile))
    _finish(b, c, x, dims, out_shape, shape, axis, prelude, body, "ARG.topk-last-axis", moved)


def _finish(b: Builder, c: Contract, x: str, dims: list[str], out_shape: tuple[str | int, ...],
            shape: tuple[int, ...], axis: int, prelude: Stmts, body: Stmts, rule: str, moved: str) -> None:
    """The kernel spec and forward, the same for both formulations."""
    ctx = b.ctx
    rank = len(dims)
    how = "the top 1 along the last axis" if rule == "ARG.topk-last-axis" else \
        "the extreme along the axis, then its first position by cumsum(ones)"
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", out_shape, c.output_dtype or "int64"), prelude=prelude, body=body,
        doc=f"{c.op} over axis {axis} ({rule}): {how}{moved}; one kernel for this fixed dim (P1.single-dim-kernel).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, rank)
    xn = b.prepare(x, None, "")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    keepdim = bool(c.reduction.keepdim) if c.reduction else False
    b.forward.result = b.reduced_result(x, [1 if i == axis else s for i, s in enumerate(shape)], keepdim)


PATTERNS = (Pattern("argreduce", ("reduction",), build_argreduce, ("ARG.topk-last-axis", "ARG.first-match"), ops=OPS,
                    needs=arg_needs),)
