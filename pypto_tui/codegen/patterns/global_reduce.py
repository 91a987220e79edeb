"""Pattern E: a global statistic of a large tensor, accumulated over a loop, then applied.

The Frobenius-norm scaling `x / sqrt(sum(x^2))`: forward flattens; the kernel starts a `zeros`
accumulator, adds each chunk's partial sum of squares inside one `pypto.loop` (the accumulator is
written with the flavour's whole-tensor write inside the loop, never moved into the output after
it: V020.move-after-loop), then a second loop divides every chunk by the norm and assembles it
into the output (E.global-accumulator). The loops run one after the other, never nested.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call, column_sum, reduce
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites


@cites("E.global-accumulator", "LOSS.scalar-rows")
def build_global_norm(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op != "frobenius_norm":
        raise Unsupported(f"'{c.op}' is not a global statistic pattern E scaffolds")
    rows = ctx.dims.reshape == "scalar_rows"
    rank = 2 if rows else 1
    if len(c.operands) != 1 or ctx.geometry is None or ctx.tile is None or len(ctx.geometry.shape) != rank:
        raise Unsupported("the Frobenius scaling needs one input flattened to 1-D or laid out as rows")
    x = c.operands[0].name
    eps_value = c.op_args.get("eps")
    scalars = [b.scalar("eps", float(eps_value), init_key="eps")] if eps_value else []
    loop = ctx.loop_count is not None
    dims = ["rows", "cols"] if rows else ["flat_size"]
    b.pattern = "E"
    b.summary = "Pattern E: global sum of squares in a zeros accumulator" + (
        " over a loop, then a second loop scales every chunk" if loop else "") + (
        ", every row summed at once" if rows else "")
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, "the input's rows" if rows else "the flattened input",
                           loop_note="handled by the pypto.loops below (LOOP_COUNT)" if loop else None)
    acc = Ex.name("sq_sum")

    def norm() -> Ex:
        s = acc + Ex.name("eps", tensor=False) if scalars else acc
        return call("sqrt", s)

    def squares(chunk: Ex, size: str) -> Ex:
        """The chunk's sum of squares: (1,), or (1, 1) from its row sums (LOSS.scalar-rows)."""
        if not rows:
            return reduce("sum", chunk * chunk, 0, True)
        return column_sum(reduce("sum", chunk * chunk, 1, True), size)

    def scaled(chunk: Ex, size: str, by: Ex) -> Ex:
        """The chunk over the norm: a (1, 1) norm is widened along the rows first (one axis at a time)."""
        return chunk / (call("expand_clone", by, dims_list([size, 1])) if rows else by)

    prelude: Stmts = []
    if not loop:
        body = b.tmpl("global", tile=tile, acc=name("sq_sum"), part=squares(Ex.name(x), "rows"), out=name("out"),
                      value=scaled(Ex.name(x), "rows", norm()))
    else:
        def view(chunk: str, size: str, off: str) -> Stmts:
            return b.view(chunk, x, [size, "cols"] if rows else [size], [off, 0] if rows else [off])

        def sum_step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl("global_sum_step", views=view(chunk, size, off), acc=name("sq_sum"),
                          part=squares(Ex.name(chunk), size))

        def apply_step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl("global_apply_step", views=view(chunk, size, off),
                          value=scaled(Ex.name(chunk), size, Ex.name("norm")),
                          offsets=dims_list([off, 0] if rows else [off]), out=name("out"))

        prelude, sums = b.chunked_loop(dims[0], sum_step, "bi", "SUM_LOOP", setup=b.tmpl(
            "global_setup", tile=tile, acc=name("sq_sum"), shape=dims_list([1, 1] if rows else [1]), dtype=b.pdtype()))
        body = sums + b.fwd("norm = {v}", v=norm().node) + b.loop_over(apply_step, "bj", "SCALE_LOOP")
    shape = tuple(dims)
    spec = KernelSpec(
        factory="create_frobenius_norm_kernel", kernel="frobenius_norm_kernel", dims=dims, scalars=scalars,
        inputs=[TensorParam(x, shape, ctx.dtype)],
        output=TensorParam("out", shape, c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc="Pattern E (E.global-accumulator): x / sqrt(sum(x^2)) over the whole tensor.",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or ()))
    if rows:  # a row is the trailing axes the dimension step merged, read off x's own shape
        xn = b.prepare(x, b.reshape_args(x, ctx.dims.axis_map), "rows")
    else:
        xn = b.prepare(x, [b.expr("-1")], "flat")
    b.unpack_dims(xn, dims)
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x))


PATTERNS = (Pattern("E", ("norm",), build_global_norm, ("E.global-accumulator", "LOSS.scalar-rows"),
                    ops=("frobenius_norm",)),)
