"""A narrow or select view a kernel reads, as a copy kernel (SLICE.rows-copy), and a constant pad of one
axis, the same copy the other way round (PAD.rows-copy).

`q, k = y.split(d, -1)` or `x[:, 0]` is a view in torch, but its result is not contiguous: the next
kernel cannot read it as an input and forward may not copy it. The dimension step lays the input out
as rows (the axes before the narrowed one, then the rest merged), so the part is one block of each
row at a fixed column: the kernel views that block (a chunk of rows at a time when auto_tiles needs a
loop) and assembles it at column 0 of the output. Nothing is computed; forward lays the input out and
gives the output its shape back, every size read from the tensors.
"""

from __future__ import annotations

from collections.abc import Callable

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, literal, name
from pypto_tui.codegen.expr import Ex
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import TileChoice

OPS = ("narrow",)
PAD_OPS = ("pad",)


def _rows_input(b: Builder, ops: tuple[str, ...], reshape: str, what: str,
                no_layout: str) -> tuple[str, list[int], list[int], TileChoice]:
    """The one input of a rows-layout copy (a narrow, a pad), its axis map (the axes before the axis, then
    the rest) and its tile, or Unsupported when the contract or the dimension step does not give that
    layout."""
    ctx = b.ctx
    c = ctx.contract
    if c.op not in ops or len(c.operands) != 1:
        raise Unsupported(f"'{c.op}' is not a {what} of one tensor")
    plan = ctx.dims
    if plan.reshape != reshape or ctx.main is None or len(plan.axis_map) != 2:
        raise Unsupported(f"the {what} has no rows layout: {no_layout}")
    if ctx.loop is not None and ctx.loop.axis != 0:
        raise Unsupported(f"the {what} loops over chunks of rows only")
    lead, rest = plan.axis_map
    return c.operands[0].name, list(lead), list(rest), ctx.main


def _rows_body(b: Builder, copy: Callable[[str, str | int, str], Stmts], setup: Stmts) -> tuple[Stmts, Stmts]:
    """(factory prelude, kernel body): `setup`, then `copy` over all the rows, or over chunks of rows in the
    plan's loop."""
    if b.ctx.loop is None:
        return [], setup + copy("rows", 0, "all")
    return b.chunked_loop("rows", copy, setup=setup)


def _lay_rows(b: Builder, x: str, lead: list[int], rest: list[int]) -> str:
    """forward's (rows, width) layout of x, the sizes read from x: rows the axes before the copied axis,
    `inner` the size after it; the laid-out tensor's name."""
    b.assert_rank(x, len(lead) + len(rest))
    rows_of = " * ".join(f"{x}.shape[{a}]" for a in lead) or "1"
    laid = b.prepare(x, [b.expr(rows_of), b.expr("-1")], "rows")
    inner = " * ".join(f"{x}.shape[{a}]" for a in rest[1:]) or "1"
    b.forward.prepare += b.fwd("rows, width = {x}.shape", x=name(laid))
    b.forward.prepare += b.fwd(f"inner = {inner}")
    return laid


def _give_back(b: Builder, x: str, lead: list[int], rest: list[int], copied: str) -> None:
    """forward's result: out (rows, copied width) in x's shape with the copied axis `copied` long."""
    sizes = [f"{x}.shape[{a}]" for a in lead] + [copied] + [f"{x}.shape[{a}]" for a in rest[1:]]
    b.forward.result = b.expr(f"out.reshape({', '.join(sizes)}{',' if len(lead) + len(rest) == 1 else ''})")


@cites("SLICE.rows-copy")
def build_slice(b: Builder) -> None:
    x, lead, rest, main = _rows_input(b, OPS, "slice_rows", "narrow", "give its input a known shape")
    ctx = b.ctx
    c = ctx.contract
    loop = ctx.loop
    d = len(lead)
    start, length = int(c.op_args["start"]), int(c.op_args["length"])
    b.pattern = "slice"
    b.summary = (f"narrow of axis {d} (positions {start} to {start + length - 1}): each row's block copied out "
                 "of the (rows, width) input" + (", a loop over chunks of rows" if loop else ""))
    tile = b.tile_constant(main, "the output's (rows, part width) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)

    def copy(size: str, off: str | int, suffix: str) -> Stmts:
        chunk = f"part_{suffix}"
        return b.tmpl("copy_block", views=b.view(chunk, x, [size, "part"], [off, "col"]), part=Ex.name(chunk),
                      offsets=dims_list([off, 0]), out=name("out"))

    prelude, body = _rows_body(b, copy, b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_slice_kernel", kernel="slice_kernel", dims=["rows", "width", "col", "part"], scalars=[],
        inputs=[TensorParam(x, ("rows", "width"), ctx.dtype)],
        output=TensorParam("out", ("rows", "part"), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{b.summary} (SLICE.rows-copy): the kernel moves data only.",
    )
    b.add_kernel(spec)
    laid = _lay_rows(b, x, lead, rest)
    b.forward.prepare += b.fwd(f"col = {start} * inner")
    b.forward.prepare += b.fwd(f"part = {length} * inner")
    b.call_kernel(spec, [laid])
    _give_back(b, x, lead, rest, str(length))


@cites("PAD.rows-copy")
def build_pad(b: Builder) -> None:
    """A constant pad of one axis (PAD.rows-copy): rows of the input assembled between two fill blocks."""
    from pypto_tui.ops.layout import pad_pairs

    x, lead, rest, main = _rows_input(b, PAD_OPS, "pad_rows", "pad", "pad one axis at a time, by non-negative widths")
    ctx = b.ctx
    c = ctx.contract
    loop = ctx.loop
    d = len(lead)
    before, after = pad_pairs(c.op_args.get("pad"), len(lead) + len(rest))[d]
    value = float(c.op_args.get("value", 0.0))
    b.pattern = "pad"
    b.summary = (f"pad of axis {d} by ({before}, {after}) with {value}: each row of the (rows, width) input "
                 "copied between two fill blocks" + (", a loop over chunks of rows" if loop else ""))
    tile = b.tile_constant(main, "the input's (rows, width) layout",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    dt = b.pdtype()

    def copy(size: str, off: str | int, suffix: str) -> Stmts:
        chunk = f"rows_{suffix}"
        steps = b.tmpl("window_fill_slab", width=name("lo"), shape=dims_list([size, "lo"]), at=dims_list([off, 0]),
                       dt=dt, out=name("out"))
        steps += b.tmpl("copy_block", views=b.view(chunk, x, [size, "width"], [off, 0]), part=name(chunk),
                        offsets=dims_list([off, "lo"]), out=name("out"))
        steps += b.tmpl("window_fill_slab", width=name("hi"), shape=dims_list([size, "hi"]),
                        at=dims_list([off, "lo + width"]), dt=dt, out=name("out"))
        return steps

    looped, body = _rows_body(b, copy, b.tmpl("window_fill", fill=literal(value), tile=tile))
    spec = KernelSpec(
        factory="create_pad_kernel", kernel="pad_kernel", dims=["rows", "width", "lo", "total"], scalars=[],
        inputs=[TensorParam(x, ("rows", "width"), ctx.dtype)],
        output=TensorParam("out", ("rows", "total"), c.output_dtype or ctx.dtype),
        prelude=b.fwd("hi = total - lo - width") + looped, body=body,
        doc=f"{b.summary} (PAD.rows-copy): the kernel moves data and fills, nothing else.",
    )
    b.add_kernel(spec)
    laid = _lay_rows(b, x, lead, rest)
    b.forward.prepare += b.fwd(f"lo = {before} * inner")
    b.forward.prepare += b.fwd(f"total = width + {before + after} * inner")
    b.call_kernel(spec, [laid])
    _give_back(b, x, lead, rest, f"{x}.shape[{d}] + {before + after}")


PATTERNS = (Pattern("slice", ("layout",), build_slice, ("SLICE.rows-copy",), ops=OPS),
            Pattern("pad", ("layout",), build_pad, ("PAD.rows-copy",), ops=PAD_OPS))
