"""Cross-entropy of (N, C) logits against (N,) class indices (LOSS.cross-entropy-gather).

Per row: log-softmax (x - max - log(sum(exp(x - max)))), then `pypto.gather` of the target's
column, then the negated sum over the batch, scaled as the contract says (mean: 1/N). forward
only reshapes the targets to (N, 1) (gather's index has the logits' rank). A loop, when
auto_tiles needs one, runs along the rows and accumulates each chunk's part in the output itself
(V020.move-after-loop), starting from zeros.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, column_sum
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


def ce_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The tile is for the (N, C) logits, reduced along the classes; the loop along the rows."""
    base = main_tile_needs(c, dims, g, kb)
    return replace(base, tiles=(replace(base.tiles[0], reduce_dim=1),), loop_axis=0)


@cites("LOSS.cross-entropy-gather", "V020.move-after-loop", "LOSS.scalar-rows")
def build_cross_entropy(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    ops = [t.name for t in c.operands]
    if len(ops) != 2 or ctx.geometry is None or ctx.main is None or len(ctx.geometry.shape) != 2:
        raise Unsupported("cross_entropy is scaffolded for (N, C) logits and (N,) class indices")
    x, t = ops
    scaling = c.reduction.scaling if c.reduction else "mean"
    loop = ctx.loop
    b.pattern = "D"
    b.summary = ("Pattern D: cross-entropy, log-softmax per row, gather of the target's column, sum over the batch"
                 + (", accumulated over a loop along the rows" if loop else ""))
    tile = b.tile_constant(ctx.main, f"the (N, C) logits {x}",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    prelude = b.fwd("NEG_SCALE = -1.0 / rows") if scaling == "mean" else b.fwd("NEG_SCALE = -1.0")
    scale = Ex.name("NEG_SCALE", tensor=False)

    def terms(xv: Ex, tv: Ex, rows: str = "rows") -> tuple[Stmts, Ex]:
        stmts = b.tmpl("cross_entropy_terms", x=xv, targets=tv)
        return stmts, column_sum(Ex.name("picked"), rows) * scale

    if loop is None:
        stmts, total = terms(Ex.name(x), Ex.name(t))
        body = b.tmpl("loss", tile=tile, terms=stmts, out=name("out"), total=total)
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            xc, tc = f"{x}_{suffix}", f"{t}_{suffix}"
            views = b.view(xc, x, [size, "classes"], [off, 0]) + b.view(tc, t, [size, 1], [off, 0])
            stmts, part = terms(Ex.name(xc), Ex.name(tc), size)
            return b.tmpl("loss_step", views=views, terms=stmts, out=name("out"), part=part)

        loop_prelude, body = b.chunked_loop("rows", step, setup=b.tmpl(
            "loss_setup", tile=tile, out=name("out"), shape=dims_list([1, 1]), dtype=b.pdtype(c.output_dtype)))
        prelude += loop_prelude
    tdt = b.input_dtype(t)
    spec = KernelSpec(
        factory="create_cross_entropy_kernel", kernel="cross_entropy_kernel", dims=["rows", "classes"], scalars=[],
        inputs=[TensorParam(x, ("rows", "classes"), ctx.dtype), TensorParam(t, ("rows", 1), tdt)],
        output=TensorParam("out", (1, 1), c.output_dtype or ctx.dtype), prelude=prelude, body=body,
        doc=f"Pattern D (LOSS.cross-entropy-gather): {c.formula or 'cross-entropy'}; reduction {scaling}.",
    )
    b.add_kernel(spec)
    b.assert_rank(x, 2)
    b.assert_rank(t, 1)
    b.assert_expr(b.expr("{t}.shape[0] == {x}.shape[0]", t=name(t), x=name(x)), f"one class index per row of {x}")
    xn = b.prepare(x, None, "")
    tn = b.prepare(t, [b.expr("-1"), b.expr("1")], "col")
    b.unpack_dims(xn, ["rows", "classes"])
    b.call_kernel(spec, [xn, tn])
    b.forward.result = b.expr("out.reshape(())")


PATTERNS = (Pattern("cross_entropy", ("loss",), build_cross_entropy, ("LOSS.cross-entropy-gather",),
                    ops=("cross_entropy",), needs=ce_needs),)
