"""triu / tril of a matmul: the product, then `where` with a mask built from cumsum(ones).

pypto 0.2.0 has triu and tril, but the cost model does not know them (F92001 "No pipe type
corresponding to opcode TRIUL"), and a mask from a broadcast compare of `arange` rows and columns
is exact at the first interpreter stage and wrong after Pass_28 / Pass_36 (measured): the column
and row index grids are cumsum(ones) along each axis instead (TRI.mask-by-cumsum). The grids are
built once; pattern B's M loop views the rows of A, of the grids and of the output at the same
offset (B.matmul-m-loop), and keeps the product where col >= row + diagonal (triu) or
col <= row + diagonal (tril), zero elsewhere.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, literal, name
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


def is_masked_product(c: Contract) -> bool:
    return c.op == "matmul" and c.op_args.get("post") in ("triu", "tril")


def tri_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """Pattern B's needs (the cube for M x K x N, the M loop); the vec tile on the output also runs
    the mask's cumsums, so it gets cumsum's buffers from the pack (ops.toml [op.cumsum])."""
    base = main_tile_needs(c, dims, g, kb)
    scan = kb.op_data("cumsum")
    role = replace(base.tiles[0], live_buffers=scan.live_buffers, min_rows=scan.min_rows)
    return replace(base, tiles=(role,))


@cites("TRI.mask-by-cumsum", "B.matmul-m-loop", "B.matmul-cube-tiles")
def build_tri_matmul(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    mm = ctx.dims.matmul or {}
    post = str(c.op_args.get("post"))
    diagonal = c.op_args.get("post_diagonal", 0) or 0
    ops = c.operands
    if len(ops) != 2 or mm.get("batch") is not None or mm.get("a_trans") or ctx.main is None:
        raise Unsupported(f"{post} of a product is scaffolded for a 2-D product with A not transposed")
    a_name, b_name = ops[0].name, ops[1].name
    b_trans = bool(mm.get("b_trans"))
    out_dtype = c.output_dtype or "fp32"
    pdt = b.pdtype(out_dtype)
    cube_m, cube_k, cube_n = b.cube_constants()
    tile = b.tile_constant(ctx.main, f"the {post} mask on the (m, n) product")
    keep_op = "ge" if post == "triu" else "le"

    def keep(cols: Ex, rows: Ex) -> Ex:
        return call(keep_op, cols, rows + int(diagonal))

    b.pattern = "B"
    b.summary = (f"{post} of a 2-D matmul: the product masked with where (col {'>=' if post == 'triu' else '<='} "
                 f"row{f' + {diagonal}' if diagonal else ''}), the index grids from cumsum(ones) (TRI.mask-by-cumsum)")
    setup = b.tmpl("tri_matmul_setup", cube_m=cube_m, cube_k=cube_k, cube_n=cube_n, tile=tile, dtype=pdt)
    prelude: Stmts = []
    common = {"b": name(b_name), "out_dtype": pdt, "b_trans": literal(b_trans), "out": name("out")}
    if ctx.loop is None:
        body = setup + b.tmpl("tri_matmul_step", views=[], a_chunk=name(a_name),
                              keep=keep(Ex.name("col_index"), Ex.name("row_index")), offsets=dims_list([0, 0]),
                              **common)
    else:
        b.summary += ", looping along M"

        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk, cols, rows = f"{a_name}_{suffix}", f"cols_{suffix}", f"rows_{suffix}"
            views = (b.view(chunk, a_name, [size, "k"], [off, 0]) + b.view(cols, "col_index", [size, "n"], [off, 0])
                     + b.view(rows, "row_index", [size, "n"], [off, 0]))
            return b.tmpl("tri_matmul_step", views=views, a_chunk=name(chunk), keep=keep(Ex.name(cols), Ex.name(rows)),
                          offsets=dims_list([off, 0]), **common)

        prelude, body = b.chunked_loop("m", step, "bi", "M_LOOP", setup=setup)
    b_shape = ("n", "k") if b_trans else ("k", "n")
    spec = KernelSpec(
        factory=f"create_{post}_matmul_kernel", kernel=f"{post}_matmul_kernel", dims=["m", "k", "n"], scalars=[],
        inputs=[TensorParam(a_name, ("m", "k"), ops[0].dtype or ctx.dtype),
                TensorParam(b_name, b_shape, ops[1].dtype or ctx.dtype)],
        output=TensorParam("out", ("m", "n"), out_dtype), prelude=prelude, body=body,
        doc=f"{b.summary}; shapes are closure constants (P1.static-shape).",
    )
    b.add_kernel(spec)
    b.assert_rank(a_name, 2)
    b.assert_rank(b_name, 2)
    an = b.prepare(a_name, None, "")
    bn = b.prepare(b_name, None, "")
    b.unpack_dims(an, ["m", "k"])
    b.unpack_dims(bn, ["n", "k_b"] if b_trans else ["k_b", "n"])
    b.forward.prepare += b.fwd("assert k_b == k, {msg}",
                               msg=literal(f"inner dimensions of {a_name} and {b_name} differ"))
    b.call_kernel(spec, [an, bn])
    b.forward.result = name("out")


PATTERNS = (Pattern("tri_matmul", ("matmul",), build_tri_matmul, ("TRI.mask-by-cumsum", "TRI.not-in-cost-model"),
                    needs=tri_needs, when=is_masked_product),)
