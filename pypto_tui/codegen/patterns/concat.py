"""torch.cat as a copy kernel (CAT.rows-copy): each part, laid out as rows, lands in its column block.

The dimension step lays a concatenation along axis d out as rows: every part is (rows before d, its
width from d on) and the output (rows, the widths' sum), so a part is one contiguous block of each
output row. The kernel views each part (a chunk of rows inside the loop, when auto_tiles needs one)
and assembles the view at its column offset; nothing is computed, and forward only lays the parts
out and the output back. Measured with pypto 0.2.0: a view assembled as it is verifies every element
and every pass row; the cost model likes wide tiles and no loop (the rule's explanation has the
figures).
"""

from __future__ import annotations

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

OPS = ("cat",)
WIDE_PARTS = 8
"""Past this many parts the column offsets are a table the factory fills (`COLUMN[i]`) instead of sums
written out: an unrolled recurrent model concatenates 256 time steps, and its last offset written as a
sum nests 255 levels deep (past what a reader of the module takes); a few parts read better as sums."""


@cites("CAT.rows-copy")
def build_concat(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS:
        raise Unsupported(f"'{c.op}' is not a concatenation")
    plan = ctx.dims
    parts = [t.name for t in c.operands]
    if plan.reshape != "concat_rows" or ctx.main is None or len(plan.axis_map) != 2 or len(parts) < 2:
        raise Unsupported("the concatenation has no rows layout: give every part a known shape")
    if len(set(parts)) != len(parts):
        raise Unsupported("a part is concatenated twice: pass it once per position as its own input")
    lead, rest = plan.axis_map
    widths = [f"w{i}" for i in range(len(parts))]
    wide = len(parts) > WIDE_PARTS
    columns: Stmts = []
    offsets: list[str | int | cst.BaseExpression] = [0]
    if wide:  # the factory sums the widths once: a table of column offsets and the total `width`
        total = "width"
        columns = b.fwd(f"WIDTHS = ({', '.join(widths)})\n"
                        "COLUMN = [sum(WIDTHS[:i]) for i in range(len(WIDTHS))]\n"
                        "width = sum(WIDTHS)\n")
        offsets += [b.expr(f"COLUMN[{i}]") for i in range(1, len(parts))]
    else:
        total = " + ".join(widths)
        offsets += [" + ".join(widths[:i]) for i in range(1, len(parts))]
    loop = ctx.loop
    if loop is not None and loop.axis != 0:
        raise Unsupported("the concatenation loops over chunks of rows only")
    b.pattern = "cat"
    shown = f"{widths[0]} + ... + {widths[-1]}" if wide else " + ".join(widths)
    b.summary = (f"cat along axis {len(lead)}: {len(parts)} parts copied to their column blocks of (rows, "
                 f"{shown})" + (", a loop over chunks of rows" if loop else ""))
    tile = b.tile_constant(ctx.main, "the output's (rows, width) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def copy(size: str, off: str | int, suffix: str) -> Stmts:
        out: Stmts = []
        for part, width, col in zip(parts, widths, offsets, strict=True):
            chunk = f"{part}_{suffix}"
            out += b.tmpl("copy_block", views=b.view(chunk, part, [size, width], [off, 0]), part=Ex.name(chunk),
                          offsets=dims_list([off, col]), out=name("out"))
        return out

    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("vec_setup", tile=tile) + copy("rows", 0, "all")
    else:
        prelude, body = b.chunked_loop("rows", copy, setup=b.tmpl("vec_setup", tile=tile))
    prelude = columns + prelude
    spec = KernelSpec(
        factory="create_cat_kernel", kernel="cat_kernel", dims=["rows", *widths], scalars=[],
        inputs=[TensorParam(p, ("rows", w), ctx.dtype) for p, w in zip(parts, widths, strict=True)],
        output=TensorParam("out", ("rows", total), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (CAT.rows-copy): the kernel moves data only.",
    )
    b.add_kernel(spec)
    rank = len(lead) + len(rest)
    laid: list[str] = []
    for p in parts:
        b.assert_rank(p, rank)
        rows_of = " * ".join(f"{p}.shape[{a}]" for a in lead) or "1"
        laid.append(b.prepare(p, [b.expr(rows_of), b.expr("-1")], "rows"))
    b.forward.prepare += b.fwd("rows = {x}.shape[0]", x=name(laid[0]))
    for k, w in zip(laid, widths, strict=True):
        b.forward.prepare += b.fwd(f"{w} = {{x}}.shape[1]", x=name(k))
    if wide:
        b.forward.prepare += b.fwd(f"width = sum(({', '.join(widths)}))")
    b.call_kernel(spec, laid)
    first = parts[0]
    d = len(lead)
    sizes = [f"{first}.shape[{a}]" for a in range(d)]
    sizes.append("-1" if wide else " + ".join(f"{p}.shape[{d}]" for p in parts))
    sizes += [f"{first}.shape[{a}]" for a in range(d + 1, rank)]
    b.forward.result = b.expr(f"out.reshape({', '.join(sizes)}{',' if rank == 1 else ''})")


PATTERNS = (Pattern("cat", ("layout",), build_concat, ("CAT.rows-copy",), ops=OPS),)
