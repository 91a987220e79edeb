"""Scans along one axis: cumsum and the variants written with it (SCAN.cumsum, SCAN.variants).

The kernel keeps the input's rank (P3.rank-strategy, the single-axis table row) and scans the
contract's axis with `pypto.cumsum`; the tile covers the scanned axis like a reduce axis. pypto
0.2.0 has no flip and no cumprod, so the variants are written with what it has (measured):

- reverse: sum(x, keepdim) - cumsum(x) + x (no flip);
- exclusive (KernelBench's `cat((zero slice, x), d)[:-1]`): a zero slice at index 0 of the axis and
  the cumsum of x assembled one position further on, so nothing is rounded twice;
- masked: cumsum(x * mask), the boolean mask cast to x's dtype inside the kernel;
- cumprod: exp(cumsum(log|x|)) times the sign from the parity of the running count of negative
  elements; a zero gives log 0 = -inf, whose exp is 0 for every later position, as a product is.

A loop, when auto_tiles needs one, runs along the outermost axis that is not scanned (axis 0, or
axis 1 for a scan over axis 0): every chunk then holds whole scans, so no carry passes between
chunks (SCAN.loop-axis).

When the scanned axis is longer than the tile, the scan runs one tile width at a time and carries
the last position of each chunk into the next (SCAN.chunked-carry: a sum for the cumsums, a product
for cumprod, from the end for the reverse scan): pypto 0.2.0's pass-verify leaves no
Pass_36_CodegenPreproc row for a cumsum across tiles (measured on (32, 2048) with tile (4, 1024);
the chunked form verifies at every pass).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import MUL, Ex, call, reduce
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

OPS = ("cumsum", "reverse_cumsum", "exclusive_cumsum", "masked_cumsum", "cumprod")
Value = Callable[[Mapping[str, Ex]], tuple[Stmts, Ex]]
Dim = str | int | cst.BaseExpression


def loop_axis_for(scan_axis: int | None, rank: int) -> int:
    """The outermost axis the scan does not run along (0, or 1 for a scan over axis 0)."""
    return 1 if scan_axis == 0 and rank > 1 else 0


def scan_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The main tile on the scanned input (ops.toml gives each variant's live buffers); the loop
    along the outermost axis that is not scanned, over the rows the kernel reads."""
    base = main_tile_needs(c, dims, g, kb)
    data = kb.op_data(c.op)
    scanned = dims.reduce_axis
    # the limit was measured on scans along the last axis (cumsum transposes there); along axis 0,
    # (16, 1024) builds at 6 and 32 chunks (SCAN.carry-tile)
    if (scanned == len(g.shape) - 1 and data.carried_max_chunks is not None
            and data.carried_max_elements is not None):
        capped = replace(base.tiles[0], carry_cap=(scanned, data.carried_max_chunks, data.carried_max_elements))
        base = replace(base, tiles=(capped, *base.tiles[1:]))
    axis = loop_axis_for(dims.reduce_axis, len(g.shape))
    note = (f"the scan runs along axis 0, so the loop runs along axis {axis}, where every chunk holds whole scans "
            "(SCAN.loop-axis)") if axis else ""
    return replace(base, loop_axis=axis, loop_note=note, loop_shape=_read_shape(c, g.shape, dims.reduce_axis))


def _read_shape(c: Contract, shape: tuple[int, ...], axis: int | None) -> tuple[int, ...]:
    """The part of x the kernel scans: an exclusive scan with `[:-1]` leaves out x's last row."""
    if c.op == "exclusive_cumsum" and c.op_args.get("trim_last_row") and axis is not None:
        return (shape[0] - 1, *shape[1:])
    return shape


def _value(b: Builder, op: str, axis: int, operands: list[str]) -> Value:
    """The op's statements and value on (chunks of) its operands."""
    x = operands[0]
    if op in ("cumsum", "exclusive_cumsum"):
        return lambda env: ([], call("cumsum", env[x], axis))
    if op == "reverse_cumsum":
        return lambda env: ([], reduce("sum", env[x], axis, True) - call("cumsum", env[x], axis) + env[x])
    if op == "masked_cumsum":
        if len(operands) != 2:
            raise Unsupported("a masked scan needs the values and the mask")
        mask = operands[1]
        mdt, xdt = b.input_dtype(mask), b.input_dtype(x)

        def masked(env: Mapping[str, Ex]) -> tuple[Stmts, Ex]:
            m = env[mask] if mdt == xdt else call("cast", env[mask], Ex.raw(b.pdtype(xdt), False))
            return [], call("cumsum", env[x] * m, axis)
        return masked
    if op == "cumprod":
        def cumprod(env: Mapping[str, Ex]) -> tuple[Stmts, Ex]:
            stmts = b.tmpl("cumprod_terms", x=env[x], dim=cst.Integer(str(axis)))
            return stmts, Ex.name("magnitude") * Ex.name("sign")
        return cumprod
    raise Unsupported(f"the scan '{op}' has no scaffold yet ({', '.join(OPS)} do)")


@cites("SCAN.cumsum", "SCAN.variants", "SCAN.loop-axis", "SCAN.chunked-carry")
def build_scan(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    op = c.op or ""
    if c.op_args.get("fused") or c.op_args.get("composite"):
        raise Unsupported(c.reason or "a scan of an expression is not scaffolded")
    axis = ctx.dims.reduce_axis
    if ctx.dims.reshape != "keep" or axis is None or ctx.geometry is None or ctx.main is None:
        raise Unsupported("a scan keeps the input's rank and scans one axis; this dimension plan does not")
    operands = [t.name for t in c.operands]
    x = operands[0]
    rank = len(ctx.geometry.shape)
    dims = [f"d{i}" for i in range(rank)]
    loop = ctx.loop
    if loop is not None and loop.axis == axis:
        raise Unsupported(f"the scan runs along axis {axis}, which the loop would cut: a carried prefix between "
                          "chunks is not scaffolded; choose a tile that needs no loop")
    value = _value(b, op, axis, operands)
    b.pattern = "scan"
    b.summary = f"{op} along axis {axis} with pypto.cumsum" + (f", looping along axis {loop.axis}" if loop else "")
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    if op == "exclusive_cumsum":
        out_shape, prelude, body = _exclusive(b, x, axis, dims, value, tile)
    else:
        out_shape = tuple(dims)
        prelude, body = _inclusive(b, operands, axis, dims, value, tile)
    spec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(o, tuple(dims), b.input_dtype(o)) for o in operands],
        output=TensorParam("out", out_shape, c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"{op} along axis {axis} (SCAN.cumsum, SCAN.variants); one kernel for this fixed dim "
            "(P1.single-dim-kernel).",
    )
    b.add_kernel(spec)
    for o in operands:
        b.assert_rank(o, rank)
    for o in operands[1:]:
        b.assert_same_shape(x, o)
    names = [b.prepare(o, None, "") for o in operands]
    b.unpack_dims(names[0], dims)
    b.call_kernel(spec, names)
    b.forward.result = name("out")


def _spans_tiles(b: Builder, axis: int) -> bool:
    """The scanned axis is longer than the tile along it (the full kernel shape), so it is scanned
    in chunks with a carry (SCAN.chunked-carry)."""
    ev = b.ctx.main.evaluation if b.ctx.main is not None else None
    return ev is not None and len(ev.tile) == len(ev.shape) and ev.shape[axis] > ev.tile[axis]


def _chunked(b: Builder, sources: Mapping[str, str], shape: list[Dim], base: list[Dim], axis: int,
             out_offsets: list[Dim], value: Value, exclusive: bool = False) -> Stmts:
    """The scan of `sources` (names of tensors of `shape`, the scan axis at offset `base[axis]`) in
    chunks of one tile width along `axis`, written to out at `out_offsets` (+ the chunk's start).
    `exclusive`: each chunk writes its inclusive scan minus x (every chunk stays aligned, where a
    shifted copy would write at odd offsets: pass-verify leaves Pass_36 without a row for those)."""
    rank = len(shape)
    op = b.ctx.contract.op or ""
    width = b.expr("TILE_SHAPE[{a}]", a=cst.Integer(str(axis)))
    length = shape[axis]
    count = b.expr("ceil_div({n}, {w})", n=cst.Name(length) if isinstance(length, str) else length, w=width)
    order = b.expr("reversed(range({n}))" if op == "reverse_cumsum" else "range({n})", n=count)
    start = "scan_c * TILE_SHAPE[" + str(axis) + "]"

    def at(offsets: list[Dim], i: int) -> Dim:
        o = offsets[i]
        return b.expr(f"{o} + {start}") if o not in (0, "0") else b.expr(start)

    views: Stmts = []
    env: dict[str, Ex] = {}
    for o, src in sources.items():
        views += b.view(f"{o}_scan", src, b.chunk_shape(shape, axis, "scan_w"),
                        [at(base, i) if i == axis else base[i] for i in range(rank)])
        env[o] = Ex.name(f"{o}_scan")
        if op in ("cumsum", "exclusive_cumsum"):
            # A cumsum whose only input is a view of the kernel's input fails to compile inside a
            # pypto.loop at 16 rows (F7A001 "idx < size_", KernelBench 89 at (32, 2048), tile
            # (16, 1024)); computed from an elementwise copy it verifies at every pass.
            env[o] = Ex.raw(b.expr("{x} * 1.0", x=name(f"{o}_scan")), True, MUL)  # kept as written
    terms, v = value(env)
    last = "0" if op == "reverse_cumsum" else "scan_w - 1"
    first = next(iter(sources))
    written = b.expr("scan_part - {x}", x=name(f"{first}_scan")) if exclusive else name("scan_part")
    return b.tmpl("scan_chunks", order=order, width=width, written=written,
                  length=cst.Name(length) if isinstance(length, str) else length, views=views, terms=terms,
                  value=v, combine=b.expr("pypto.mul" if op == "cumprod" else "pypto.add"),
                  part_shape=dims_list(b.chunk_shape(shape, axis, "scan_w")),
                  offsets=dims_list([at(out_offsets, i) if i == axis else out_offsets[i] for i in range(rank)]),
                  out=name("out"), carry_shape=dims_list(b.chunk_shape(shape, axis, 1)),  # type: ignore[arg-type]
                  carry_offsets=dims_list([b.expr(last) if i == axis else 0 for i in range(rank)]))


def _inclusive(b: Builder, operands: list[str], axis: int, dims: list[str], value: Value,
               tile: Ex) -> tuple[Stmts, Stmts]:
    loop = b.ctx.loop
    rank = len(dims)
    chunks = _spans_tiles(b, axis)
    if loop is None:
        if chunks:
            return [], [*b.tmpl("vec_setup", tile=tile),
                        *_chunked(b, {o: o for o in operands}, list(dims), [0] * rank, axis, [0] * rank, value)]
        terms, v = value({o: Ex.name(o) for o in operands})
        return [], b.tmpl("scan", tile=tile, terms=terms, out=name("out"), value=v)
    lax = loop.axis

    def step(size: str, off: str, suffix: str) -> Stmts:
        offsets = b.chunk_offsets(rank, lax, off)
        views: Stmts = []
        env: dict[str, Ex] = {}
        for o in operands:
            views += b.view(f"{o}_{suffix}", o, b.chunk_shape(dims, lax, size), offsets)
            env[o] = Ex.name(f"{o}_{suffix}")
        if chunks:  # views of the inputs themselves: a cumsum of a view of a view fails to compile (F7A001)
            return _chunked(b, {o: o for o in operands}, b.chunk_shape(dims, lax, size), list(offsets), axis,
                            list(offsets), value)
        terms, v = value(env)
        return b.tmpl("scan_step", views=views, terms=terms, value=v, offsets=dims_list(offsets), out=name("out"))

    return b.chunked_loop(dims[lax], step, setup=b.tmpl("vec_setup", tile=tile))


def _exclusive(b: Builder, x: str, axis: int, dims: list[str], value: Value,
               tile: Ex) -> tuple[tuple[Dim, ...], Stmts, Stmts]:
    """A zero slice at index 0 of the scanned axis, x's cumsum assembled from index 1 on."""
    trim = bool(b.ctx.contract.op_args.get("trim_last_row"))
    narrow = bool(b.ctx.contract.op_args.get("narrow"))  # x's last position along the axis is not read
    rank = len(dims)

    def grown(i: int) -> Dim:  # the output: the axis grows by the zero slice, [:-1] trims axis 0
        delta = (1 if i == axis and not narrow else 0) - (1 if trim and i == 0 else 0)
        return dims[i] if delta == 0 else b.expr(f"{dims[i]} {'+' if delta > 0 else '-'} 1")

    def read_dim(i: int) -> Dim:  # x's scanned part
        shrink = (trim and i == 0) or (narrow and i == axis)
        return b.expr(f"{dims[i]} - 1") if shrink else dims[i]

    out_shape = tuple(grown(i) for i in range(rank))
    read: list[Dim] = [read_dim(i) for i in range(rank)]
    zero_shape: list[Dim] = [1 if i == axis else out_shape[i] for i in range(rank)]
    shift = [1 if i == axis else 0 for i in range(rank)]
    loop = b.ctx.loop
    chunks = _spans_tiles(b, axis)
    # Chunked (SCAN.chunked-carry): out[..., :n] = cumsum(x) - x over all of x's n positions, and
    # without narrow the grown last position is the total, the last chunk's carry.
    full_read: list[Dim] = [dims[i] if i == axis else read[i] for i in range(rank)]

    def last_total(offsets: list[Dim]) -> Stmts:
        if narrow or (trim and axis == 0):  # the output has no grown position along the axis
            return []
        at_end = [dims[axis] if i == axis else offsets[i] for i in range(rank)]
        return b.tmpl("scan_zero_slice", zeros=name("scan_carry"), zero_offsets=dims_list(at_end), out=name("out"))

    if loop is None and chunks:
        body = [*b.tmpl("vec_setup", tile=tile),
                *_chunked(b, {x: x}, full_read, [0] * rank, axis, [0] * rank, value, exclusive=True),
                *last_total([0] * rank)]
        return out_shape, [], body
    if loop is None:
        _, v = value({x: Ex.name("scanned")})
        body = b.tmpl("scan_exclusive", tile=tile, views=b.view("scanned", x, read, [0] * rank),
                      zeros=_zeros(b, zero_shape), zero_offsets=dims_list([0] * rank), value=v,
                      offsets=dims_list(shift), out=name("out"))
        return out_shape, [], body
    lax = loop.axis

    def step(size: str, off: str, suffix: str) -> Stmts:
        chunk = f"{x}_{suffix}"
        offsets = b.chunk_offsets(rank, lax, off)
        if chunks:
            return [*_chunked(b, {x: x}, b.chunk_shape(full_read, lax, size), list(offsets), axis, list(offsets),
                              value, exclusive=True),
                    *last_total(list(offsets))]
        _, v = value({x: Ex.name(chunk)})
        return b.tmpl("scan_exclusive_step", views=b.view(chunk, x, b.chunk_shape(read, lax, size), offsets),
                      zeros=_zeros(b, b.chunk_shape(zero_shape, lax, size)), zero_offsets=dims_list(offsets),
                      value=v, offsets=dims_list([off if i == lax else shift[i] for i in range(rank)]),
                      out=name("out"))

    total = "rows" if trim and lax == 0 else dims[lax]
    setup = b.tmpl("vec_setup", tile=tile)
    prelude, body = b.chunked_loop(total, step, setup=setup)
    if total == "rows":
        prelude = b.fwd("rows = d0 - 1") + prelude
    return out_shape, prelude, body


def _zeros(b: Builder, shape: list[Dim]) -> cst.BaseExpression:
    return b.expr("pypto.zeros({shape}, dtype={dtype})", shape=dims_list(shape), dtype=b.pdtype())


PATTERNS = (Pattern("scan", ("scan",), build_scan, ("SCAN.cumsum", "SCAN.variants", "SCAN.loop-axis",
                                                   "SCAN.chunked-carry"), ops=OPS,
                    needs=scan_needs),)
