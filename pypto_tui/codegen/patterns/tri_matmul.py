"""triu / tril of a matmul: the product, then `where` with a mask built from cumsum(ones).

pypto 0.2.0 has triu and tril, but the cost model does not know them (F92001 "No pipe type
corresponding to opcode TRIUL"), and a mask from a broadcast compare of `arange` rows and columns
is exact at the first interpreter stage and wrong after Pass_28 / Pass_36 (measured): the index
grids are cumsum(ones) along each axis instead (TRI.mask-by-cumsum). Only their difference matters,
and a chunk of rows is the first chunk shifted, so the mask kernel builds one grid of col - row over
a chunk's rows and m + n columns and each chunk reads it from column m - offset on
(TRI.mask-offset-grid): two scans of a chunk, not of the whole output. Pattern B's M loop views the
rows of A and of the output at the same offset (B.matmul-m-loop), and the mask keeps the product
where col >= row + diagonal (triu) or col <= row + diagonal (tril), zero elsewhere.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

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


@cites("TRI.mask-by-cumsum", "TRI.mask-offset-grid", "TRI.mask-kernel", "B.matmul-m-loop", "B.matmul-cube-tiles")
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

    def keep(grid: Ex, zero: Ex) -> Ex:
        return call(keep_op, grid, zero)

    b.pattern = "B"
    b.summary = (f"{post} of a 2-D matmul: the product, then a second kernel keeps it where col "
                 f"{'>=' if post == 'triu' else '<='} row{f' + {diagonal}' if diagonal else ''} (TRI.mask-kernel), "
                 "the mask from one grid of col - row built from cumsum(ones) (TRI.mask-offset-grid)")
    product_setup = b.tmpl("tri_matmul_setup", cube_m=cube_m, cube_k=cube_k, cube_n=cube_n, tile=tile)
    d = int(diagonal)

    def grid(looped: bool) -> cst.BaseExpression:
        """col - row - diagonal, less m when the chunks read the grid from column m - off on."""
        if looped:  # less (m + diagonal)
            shift = " - m" if d == 0 else f" - (m + {d})" if d > 0 else f" - (m - {-d})"
        else:  # less the diagonal
            shift = "" if d == 0 else f" - {d}" if d > 0 else f" + {-d}"
        return cst.parse_expression("pypto.cumsum(ones, 1) - pypto.cumsum(ones, 0)" + shift)

    common = {"b": name(b_name), "out_dtype": pdt, "b_trans": literal(b_trans), "out": name("out")}

    def mask_step(size: str, off: str | int, suffix: str, looped: bool = True) -> Stmts:
        chunk, grid_view, zero = f"product_{suffix}", f"grid_{suffix}", f"zero_{suffix}"
        views = (b.view(chunk, "product", [size, "n"], [off, 0])
                 + b.view(grid_view, "offset_grid", [size, "n"], [0, f"m - {off}" if looped else 0])
                 + b.view(zero, "zero", [size, "n"], [0, 0]))
        return b.tmpl("tri_mask_step", views=views, chunk=name(chunk), keep=keep(Ex.name(grid_view), Ex.name(zero)),
                      offsets=dims_list([off, 0]), out=name("out"))

    product_prelude: Stmts = []
    mask_prelude: Stmts = []
    if ctx.loop is None:
        product_body = product_setup + b.tmpl("tri_matmul_step", views=[], a_chunk=name(a_name),
                                              offsets=dims_list([0, 0]), **common)
        mask_body = b.tmpl("tri_mask_setup", tile=tile, dtype=pdt, rows=name("m"), width=name("n"),
                           grid=grid(False)) + mask_step("m", 0, "all", looped=False)
    else:
        b.summary += ", looping along M"

        def product_step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{a_name}_{suffix}"
            return b.tmpl("tri_matmul_step", views=b.view(chunk, a_name, [size, "k"], [off, 0]), a_chunk=name(chunk),
                          offsets=dims_list([off, 0]), **common)

        product_prelude, product_body = b.chunked_loop("m", product_step, "bi", "M_LOOP", setup=product_setup)
        mask_prelude = b.loop_prelude("m", Ex.name("LOOP_COUNT", tensor=False))
        mask_body = (b.tmpl("tri_mask_setup", tile=tile, dtype=pdt, rows=name("BASIC_BATCH"),
                             width=cst.parse_expression("m + n"), grid=grid(True))
                     + b.loop_over(mask_step, "bi", "M_LOOP"))
    b_shape = ("n", "k") if b_trans else ("k", "n")
    product = KernelSpec(
        factory=f"create_{post}_product_kernel", kernel=f"{post}_product_kernel", dims=["m", "k", "n"], scalars=[],
        inputs=[TensorParam(a_name, ("m", "k"), ops[0].dtype or ctx.dtype),
                TensorParam(b_name, b_shape, ops[1].dtype or ctx.dtype)],
        output=TensorParam("out", ("m", "n"), out_dtype), prelude=product_prelude, body=product_body,
        doc=f"The product of the {post} matmul (B.matmul-m-loop); shapes are closure constants (P1.static-shape).",
    )
    mask = KernelSpec(
        factory=f"create_{post}_mask_kernel", kernel=f"{post}_mask_kernel", dims=["m", "n"], scalars=[],
        inputs=[TensorParam("product", ("m", "n"), out_dtype)],
        output=TensorParam("out", ("m", "n"), out_dtype), prelude=mask_prelude, body=mask_body,
        doc=(f"{post} of the product: kept where the chunk's view of the col - row grid says so, zero elsewhere "
             "(TRI.mask-kernel, TRI.mask-offset-grid); shapes are closure constants (P1.static-shape)."),
    )
    b.add_kernel(product)
    b.add_kernel(mask)
    b.assert_rank(a_name, 2)
    b.assert_rank(b_name, 2)
    an = b.prepare(a_name, None, "")
    bn = b.prepare(b_name, None, "")
    b.unpack_dims(an, ["m", "k"])
    b.unpack_dims(bn, ["n", "k_b"] if b_trans else ["k_b", "n"])
    b.forward.prepare += b.fwd("assert k_b == k, {msg}",
                               msg=literal(f"inner dimensions of {a_name} and {b_name} differ"))
    b.call_kernel(product, [an, bn], out="product")
    b.call_kernel(mask, ["product"])
    b.forward.result = name("out")


PATTERNS = (Pattern("tri_matmul", ("matmul",), build_tri_matmul,
                    ("TRI.mask-by-cumsum", "TRI.mask-offset-grid", "TRI.mask-kernel", "TRI.not-in-cost-model"),
                    needs=tri_needs, when=is_masked_product),)
