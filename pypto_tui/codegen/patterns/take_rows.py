"""An embedding (F.embedding, nn.Embedding, table[index]) as row picks (TAKE.index-select).

The dimension step lays the index out as (n,) positions and the table as (rows, row width); the kernel
views a chunk of positions (all of them, when one pass of auto-tiles holds the output) and assembles
`pypto.index_select(table, 0, chunk)` at the chunk's rows of the (n, width) output. Nothing is computed:
each position copies one contiguous row. index_select takes a 1-D or 2-D index, so forward flattens the
index and reshapes the output back to the index's shape followed by the row's.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

OPS = ("embedding",)


@cites("TAKE.index-select")
def build_take_rows(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS or len(c.operands) != 2 or ctx.main is None:
        raise Unsupported("an embedding is scaffolded for one index and one table of known shapes")
    if ctx.dims.reshape != "take_rows":
        raise Unsupported("the embedding has no rows layout: give the index and the table known shapes")
    index, table = c.operands
    shape_i, shape_t = tuple(index.shape or ()), tuple(table.shape or ())
    loop = ctx.loop
    if loop is not None and loop.axis != 0:
        raise Unsupported("the embedding loops over chunks of positions only")
    b.pattern = "take_rows"
    b.summary = (f"embedding: row {index.name}[i] of {table.name} at each position i, with pypto.index_select"
                 + (", a loop over chunks of positions" if loop else ""))
    tile = b.tile_constant(ctx.main, "the output's (positions, row width) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def take(size: str, off: str | int, suffix: str) -> Stmts:
        chunk = f"{index.name}_{suffix}"
        picked = call("index_select", Ex.name(table.name), Ex.num(0), Ex.name(chunk))
        return b.tmpl("copy_block", views=b.view(chunk, index.name, [size], [off]), part=picked,
                      offsets=dims_list([off, 0]), out=name("out"))

    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("vec_setup", tile=tile) + take("n", 0, "all")
    else:
        prelude, body = b.chunked_loop("n", take, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_take_rows_kernel", kernel="take_rows_kernel", dims=["n", "rows", "width"], scalars=[],
        inputs=[TensorParam(index.name, ("n",), index.dtype or "int64"),
                TensorParam(table.name, ("rows", "width"), ctx.dtype)],
        output=TensorParam("out", ("n", "width"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (TAKE.index-select): the kernel moves rows only.",
    )
    b.add_kernel(spec)
    b.assert_rank(index.name, len(shape_i))
    b.assert_rank(table.name, len(shape_t))
    flat = b.prepare(index.name, [b.expr("-1")], "flat")
    rows = b.prepare(table.name, [b.expr(f"{table.name}.shape[0]"), b.expr("-1")], "rows")
    b.forward.prepare += b.fwd("n = {x}.shape[0]", x=name(flat))
    b.forward.prepare += b.fwd("rows, width = {t}.shape", t=name(rows))
    b.call_kernel(spec, [flat, rows], device_of=rows)
    sizes = [f"{index.name}.shape[{a}]" for a in range(len(shape_i))]
    sizes += [f"{table.name}.shape[{a}]" for a in range(1, len(shape_t))]
    b.forward.result = b.expr(f"out.reshape({', '.join(sizes)}{',' if len(sizes) == 1 else ''})")


PATTERNS = (Pattern("take_rows", ("layout",), build_take_rows, ("TAKE.index-select",), ops=OPS),)
