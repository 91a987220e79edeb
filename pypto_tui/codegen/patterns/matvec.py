"""A matrix times a vector (N = 1): a multiply and a sum over K, never a cube matmul (MM.matvec-reduce).

With N = 1 the cube has no legal tiles (nL0 must be a multiple of 16), and a cube pass would move
all of A to compute one column. forward lays the vector out as one (1, K) row; the kernel
multiplies A by it (pypto widens the row along one axis) and sums each row over K into (M, 1).
The tile is A's, reduced along K (the long K axis is split into reduce segments within the tile
step's budget); a loop, when auto_tiles needs one, runs along the rows of A, each chunk holding
whole rows, so no partial sum crosses chunks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, reduce
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs, TileRole

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry


def is_matvec(c: Contract) -> bool:
    """A 2-D A times a B with one column ((K, 1), (K,), or (1, K) read transposed), no mask."""
    ops = c.operands
    if c.op != "matmul" or c.op_args.get("post") or len(ops) != 2 or ops[0].shape is None or ops[1].shape is None:
        return False
    a, b = ops[0].shape, ops[1].shape
    if len(a) != 2 or c.op_args.get("transpose_a"):
        return False
    if len(b) == 1:
        return True
    return len(b) == 2 and (b[0] if c.op_args.get("transpose_b") else b[1]) == 1


def matvec_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The tile on A (M, K), reduced along K, with the pack's live buffers for the multiply-and-sum
    (ops.toml [op.matvec]); no cube; the loop along the rows when auto_tiles needs one."""
    base = main_tile_needs(c, dims, g, kb)
    shape = tuple(dims.kernel_shapes[0])
    data = kb.op_data("matvec")
    role = TileRole("main", "TILE_SHAPE", shape, g.dtype, 1, live_buffers=data.live_buffers, min_rows=data.min_rows)
    return replace(base, tiles=(role,), cube=None, loop_axis=0, loop_why="auto", loop_shape=shape)


@cites("MM.matvec-reduce")
def build_matvec(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if not (ctx.dims.matmul or {}).get("matvec") or ctx.main is None:
        raise Unsupported("this dimension plan does not lay the vector out as a row: pick the matmul strategy")
    a, v = c.operands[0].name, c.operands[1].name
    loop = ctx.loop
    b.pattern = "matvec"
    b.summary = (f"{a} @ {v} with one column: {a} times {v} as a (1, k) row, summed over k (no cube)"
                 + (", looping along the rows" if loop else ""))
    tile = b.tile_constant(ctx.main, f"{a} (m, k), reduced along k",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def value(rows: Ex) -> Ex:
        return reduce("sum", rows * Ex.name(v), 1, True)

    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("reduce", tile=tile, out=name("out"), value=value(Ex.name(a)))
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{a}_{suffix}"
            return b.tmpl("reduce_step", views=b.view(chunk, a, [size, "k"], [off, 0]), value=value(Ex.name(chunk)),
                          offsets=dims_list([off, 0]), out=name("out"))

        prelude, body = b.chunked_loop("m", step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_matvec_kernel", kernel="matvec_kernel", dims=["m", "k"], scalars=[],
        inputs=[TensorParam(a, ("m", "k"), c.operands[0].dtype or ctx.dtype),
                TensorParam(v, (1, "k"), c.operands[1].dtype or ctx.dtype)],
        output=TensorParam("out", ("m", 1), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (MM.matvec-reduce).",
    )
    b.add_kernel(spec)
    b.assert_rank(a, 2)
    b.assert_rank(v, len(c.operands[1].shape or ()))
    an = b.prepare(a, None, "")
    vn = b.prepare(v, [b.expr("1"), b.expr("-1")], "row")
    b.unpack_dims(an, ["m", "k"])
    b.assert_expr(b.expr("{v}.numel() == {a}.shape[1]", v=name(v), a=name(a)), f"{v} must hold {a}.shape[1] numbers")
    b.call_kernel(spec, [an, vn])
    out = c.output_shape
    b.forward.result = b.expr("out.reshape(-1)") if out is not None and len(out) == 1 else name("out")

PATTERNS = (Pattern("matvec", ("matmul",), build_matvec, ("MM.matvec-reduce",), needs=matvec_needs,
                    when=is_matvec),)
