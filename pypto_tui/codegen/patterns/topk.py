"""torch.topk's values over the last axis: `pypto.topk(x, k, dim, largest)` (TOPK.values).

pypto 0.2.0's topk returns the k largest (largest=False: smallest) values along the last axis in
torch's sorted order (largest first; smallest first) with their int32 indices: measured against
torch.topk(sorted=True), values and indices exact. It works on the last axis only (FC0000 on another
one, ARG.topk-last-axis), so another axis is refused with that reason rather than transposed (the
transposed form leaves passes of pass-verify without a row, as argmax's did). sorted=False is refused:
torch leaves that order unspecified (its CPU kernel returns the values unsorted), so no kernel can
match it element by element.

The kernel writes the values, or for topk's indices (topk_indices) the int32 indices cast to torch's
int64, from the same call: the output keeps the input's rank with k values on the last axis,
which is torch's own shape, so forward returns it as it is. A loop, when auto_tiles needs one, runs
along the outermost axis, so every chunk holds whole rows.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites

OPS = ("topk", "topk_indices")


@cites("TOPK.values", "ARG.topk-last-axis")
def build_topk(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op not in OPS:
        raise Unsupported(f"'{c.op}' is not topk")
    if c.op_args.get("fused") or c.op_args.get("operand_expr") or len(c.operands) != 1:
        raise Unsupported(c.reason or "topk of an expression is not scaffolded")
    dims_plan = ctx.dims
    axis = dims_plan.reduce_axis
    if dims_plan.reshape != "keep" or axis is None or ctx.geometry is None or ctx.main is None:
        raise Unsupported("topk's axis is not known: give it a dim")
    x = c.operands[0].name
    rank = len(ctx.geometry.shape)
    last = rank - 1
    if axis != last:
        raise Unsupported(f"topk over axis {axis}, not the last: pypto.topk works on the last axis only "
                          "(ARG.topk-last-axis); move the axis last in the task (x.transpose) or give dim=-1")
    k = c.op_args.get("k")
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise Unsupported(f"topk's k is {k!r}: the kernel takes a constant k of at least 1")
    if not c.op_args.get("sorted", True):
        raise Unsupported("topk with sorted=False: torch leaves the order of the values unspecified (its CPU kernel "
                          "returns them unsorted), so no kernel can match it element by element; use sorted=True")
    largest = bool(c.op_args.get("largest", True))
    indices = c.op == "topk_indices"  # the positions, pypto.topk's int32 indices as torch's int64
    result = call("cast", Ex.name("indices"), Ex.raw(b.pdtype("int64"), False)) if indices else Ex.name("values")
    dims = [f"d{i}" for i in range(rank)]
    loop = ctx.loop
    loop_x = loop.axis if loop is not None else 0
    if loop is not None and loop_x == last:
        raise Unsupported(f"topk of rows this long ({ctx.geometry.shape[last]}) needs a loop along the searched axis: "
                          "not scaffolded")
    b.pattern = "topk"
    what = "positions of the" if indices else "the"
    b.summary = (f"topk: {what} {k} {'largest' if largest else 'smallest'} values along axis {axis} with pypto.topk, "
                 "sorted as torch returns them") + (f", looping along axis {loop_x}" if loop else "")
    tile = b.tile_constant(ctx.main, x, loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    common = {"k": Ex.num(k), "dim": Ex.num(last), "largest": Ex.raw(b.expr(str(largest)), False), "out": name("out"),
              "result": result}
    prelude: Stmts = []
    if loop is None:
        body = b.tmpl("topk", tile=tile, x=Ex.name(x), **common)
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            offsets = b.chunk_offsets(rank, loop_x, off)
            return b.tmpl("topk_step", views=b.view(chunk, x, b.chunk_shape(dims, loop_x, size), offsets),
                          x=Ex.name(chunk), offsets=dims_list(offsets), **common)

        prelude, body = b.chunked_loop(dims[loop_x], step, setup=b.tmpl("vec_setup", tile=tile))
    spec = KernelSpec(
        factory=f"create_{c.op}_kernel", kernel=f"{c.op}_kernel", dims=dims, scalars=[],
        inputs=[TensorParam(x, tuple(dims), ctx.dtype)],
        output=TensorParam("out", (*dims[:axis], k), c.output_dtype or ctx.dtype),
        prelude=prelude, body=body,
        doc=f"topk's {'indices' if indices else 'values'} over axis {axis} (TOPK.values): {what} {k} "
            f"{'largest' if largest else 'smallest'}, sorted; one kernel for this fixed k and dim "
            "(P1.single-dim-kernel).",
    )
    b.add_kernel(spec)
    b.assert_rank(x, rank)
    xn = b.prepare(x, None, "")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    b.forward.result = name("out")


PATTERNS = (Pattern("topk", ("reduction",), build_topk, ("TOPK.values", "ARG.topk-last-axis"), ops=OPS),)
