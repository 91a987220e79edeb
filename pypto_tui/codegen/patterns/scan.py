"""Scans: an inclusive prefix sum along one axis, `pypto.cumsum(x, dim)` (SCAN.cumsum).

The kernel keeps the input's rank (P3.rank-strategy, the single-axis table row) and scans the
contract's axis in one call; the tile covers the scanned axis like a reduce axis. A loop, when
auto_tiles needs one, runs along axis 0, which must not be the scanned axis: every chunk then
holds whole rows of the scan, so no carry passes between chunks.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites


@cites("SCAN.cumsum")
def build_scan(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op != "cumsum":
        raise Unsupported(f"the scan '{c.op}' has no scaffold yet (cumsum does)")
    if len(c.operands) != 1 or c.op_args.get("fused"):
        raise Unsupported(c.reason or "a scan of an expression is not scaffolded")
    axis = ctx.dims.reduce_axis
    if ctx.dims.reshape != "keep" or axis is None or ctx.geometry is None or ctx.main is None:
        raise Unsupported("a scan keeps the input's rank and scans one axis; this dimension plan does not")
    x = c.operands[0].name
    shape = ctx.geometry.shape
    rank = len(shape)
    dims = [f"d{i}" for i in range(rank)]
    loop = ctx.loop is not None
    if loop and ctx.loop is not None and ctx.loop.axis == axis:
        raise Unsupported(f"the scan runs along axis {axis}, which the loop would cut: a carried prefix between "
                          "chunks is not scaffolded; choose a tile that needs no loop")
    b.pattern = "scan"
    b.summary = f"cumsum along axis {axis} in one pypto.cumsum call" + (", looping along axis 0" if loop else "")
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    prelude: Stmts = []
    if not loop:
        body = b.tmpl("scan", tile=tile, out=name("out"), value=call("cumsum", Ex.name(x), axis))
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            offsets = b.chunk_offsets(rank, 0, off)
            return b.tmpl("scan_step", views=b.view(chunk, x, b.chunk_shape(dims, 0, size), offsets),
                          value=call("cumsum", Ex.name(chunk), axis), offsets=dims_list(offsets), out=name("out"))

        prelude, body = b.chunked_loop("d0", step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory="create_cumsum_kernel", kernel="cumsum_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", tuple(dims), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"cumsum along axis {axis} (SCAN.cumsum); one kernel for this fixed dim (P1.single-dim-kernel).",
    )
    b.call_as_laid_out(spec, x, dims)


PATTERNS = (Pattern("scan", ("scan",), build_scan, ("SCAN.cumsum",), ops=("cumsum",)),)
