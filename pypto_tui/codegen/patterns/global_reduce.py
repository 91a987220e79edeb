"""Pattern E: a global statistic of a large tensor, accumulated over a loop, then applied.

The Frobenius-norm scaling `x / sqrt(sum(x^2))`: forward flattens; the kernel starts a `zeros`
accumulator, adds each chunk's partial sum of squares inside one `pypto.loop` (the accumulator is
written with the flavour's whole-tensor write inside the loop, never moved into the output after
it: V020.move-after-loop), then a second loop divides every chunk by the norm and assembles it
into the output (E.global-accumulator). The loops run one after the other, never nested.
"""

from __future__ import annotations

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call, reduce
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.spec import KernelSpec, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites


@cites("E.global-accumulator")
def build_global_norm(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if c.op != "frobenius_norm":
        raise Unsupported(f"'{c.op}' is not a global statistic pattern E scaffolds")
    if len(c.operands) != 1 or ctx.geometry is None or ctx.tile is None or len(ctx.geometry.shape) != 1:
        raise Unsupported("the Frobenius scaling needs one input flattened to 1-D")
    x = c.operands[0].name
    eps_value = c.op_args.get("eps")
    scalars = [b.scalar("eps", float(eps_value), init_key="eps")] if eps_value else []
    loop = ctx.loop_count is not None
    b.pattern = "E"
    b.summary = "Pattern E: global sum of squares in a zeros accumulator" + (
        " over a loop, then a second loop scales every chunk" if loop else "")
    assert ctx.main is not None
    tile = b.tile_constant(ctx.main, "the flattened input",
                           loop_note="handled by the pypto.loops below (LOOP_COUNT)" if loop else None)
    acc = Ex.name("sq_sum")

    def norm() -> Ex:
        s = acc + Ex.name("eps", tensor=False) if scalars else acc
        return call("sqrt", s)

    prelude: Stmts = []
    if not loop:
        part = reduce("sum", Ex.name(x) * Ex.name(x), 0, True)
        body = b.tmpl("global", tile=tile, acc=name("sq_sum"), part=part, out=name("out"), value=Ex.name(x) / norm())
    else:
        def sum_step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            ch = Ex.name(chunk)
            return b.tmpl("global_sum_step", views=b.view(chunk, x, [size], [off]), acc=name("sq_sum"),
                          part=reduce("sum", ch * ch, 0, True))

        def apply_step(size: str, off: str, suffix: str) -> Stmts:
            chunk = f"{x}_{suffix}"
            return b.tmpl("global_apply_step", views=b.view(chunk, x, [size], [off]),
                          value=Ex.name(chunk) / Ex.name("norm"), offsets=dims_list([off]), out=name("out"))

        prelude, sums = b.chunked_loop("flat_size", sum_step, "bi", "SUM_LOOP",
                                       setup=b.tmpl("global_setup", tile=tile, acc=name("sq_sum"), dtype=b.pdtype()))
        body = sums + b.fwd("norm = {v}", v=norm().node) + b.loop_over(apply_step, "bj", "SCALE_LOOP")
    spec = KernelSpec(
        factory="create_frobenius_norm_kernel", kernel="frobenius_norm_kernel", dims=["flat_size"], scalars=scalars,
        inputs=[TensorParam(x, ("flat_size",), ctx.dtype)],
        output=TensorParam("out", ("flat_size",), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc="Pattern E (E.global-accumulator): x / sqrt(sum(x^2)) over the whole tensor.",
    )
    b.add_kernel(spec)
    b.assert_rank(x, len(c.operands[0].shape or ()))
    xn = b.prepare(x, [b.expr("-1")], "flat")
    b.unpack_dims(xn, ["flat_size"])
    b.call_kernel(spec, [xn])
    b.forward.result = b.expr("out.reshape({x}.shape)", x=name(x))


PATTERNS = (Pattern("E", ("norm",), build_global_norm, ("E.global-accumulator",), ops=("frobenius_norm",)),)
