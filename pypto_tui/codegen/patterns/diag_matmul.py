"""diag(a) @ B (and A @ diag(b)): a broadcast multiply, never a matmul (MM.diag-broadcast).

The product with a diagonal matrix scales B's rows by a (A's columns by b). Building the N x N
diagonal and running the cube would move N^2 numbers to use N of them: the kernel multiplies B
by a laid out as an (N, 1) column (a (1, M) row), which pypto widens along one axis. forward
only reshapes the vector. A loop, when auto_tiles needs one, runs along the rows of B, each chunk
reading the matching rows of the column (or the whole row vector).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex
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


def diag_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """One vec tile on the (N, M) output, no cube; a loop only when auto_tiles needs one."""
    base = main_tile_needs(c, dims, g, kb)
    return replace(base, tiles=(replace(base.tiles[0], reduce_dim=None),), cube=None, loop_axis=0, loop_why="auto")


@cites("MM.diag-broadcast")
def build_diag_matmul(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    info = ctx.dims.matmul or {}
    if len(c.operands) != 2 or ctx.main is None or "diag_rows" not in info:
        raise Unsupported("a product with a diagonal matrix needs its vector and its matrix")
    rows = bool(info["diag_rows"])
    a, m = (c.operands[0].name, c.operands[1].name) if rows else (c.operands[1].name, c.operands[0].name)
    vec_shape: tuple[str | int, ...] = ("rows", 1) if rows else (1, "cols")
    loop = ctx.loop
    b.pattern = "diag"
    b.summary = (f"diag({a}) @ {m} as {m} * {a} laid out as a column (a broadcast multiply, no matmul)" if rows else
                 f"{m} @ diag({a}) as {m} * {a} laid out as a row (a broadcast multiply, no matmul)")
    if loop is not None:
        b.summary += ", looping along the rows"
    tile = b.tile_constant(ctx.main, "the (rows, cols) output", loop_note="handled by the pypto.loop below "
                           "(LOOP_COUNT)" if loop else None)
    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("elementwise", tile=tile, terms=[], out=name("out"), value=Ex.name(m) * Ex.name(a))
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            mc = f"{m}_{suffix}"
            views = b.view(mc, m, [size, "cols"], [off, 0])
            vec = Ex.name(a)
            if rows:
                views += b.view(f"{a}_{suffix}", a, [size, 1], [off, 0])
                vec = Ex.name(f"{a}_{suffix}")
            return b.tmpl("elementwise_step", views=views, terms=[], value=Ex.name(mc) * vec,
                          offsets=dims_list([off, 0]), out=name("out"))

        prelude, body = b.chunked_loop("rows", step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_diag_matmul_kernel", kernel="diag_matmul_kernel", dims=["rows", "cols"], scalars=[],
        inputs=[TensorParam(m, ("rows", "cols"), ctx.dtype), TensorParam(a, vec_shape, ctx.dtype)],
        output=TensorParam("out", ("rows", "cols"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (MM.diag-broadcast).",
    )
    b.add_kernel(spec)
    b.assert_rank(m, 2)
    b.assert_rank(a, 1)
    mn = b.prepare(m, None, "")
    an = b.prepare(a, [b.expr("-1"), b.expr("1")] if rows else [b.expr("1"), b.expr("-1")], "col" if rows else "row")
    b.unpack_dims(mn, ["rows", "cols"])
    axis = 0 if rows else 1
    b.assert_expr(b.expr(f"{{v}}.shape[0] == {{mat}}.shape[{axis}]", v=name(a), mat=name(m)),
                  f"diag({a}) does not match the {'rows' if rows else 'columns'} of {m}")
    b.call_kernel(spec, [mn, an])
    b.forward.result = name("out")


PATTERNS = (Pattern("diag", ("matmul",), build_diag_matmul, ("MM.diag-broadcast",), ops=("diag_matmul",),
                    needs=diag_needs),)
