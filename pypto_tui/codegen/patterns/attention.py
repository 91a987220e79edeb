"""Scaled dot-product attention: two batched matmuls and a softmax (ATTN.sdpa).

forward merges the leading axes (batch, heads) into one batch (dims' leading_batch: a view), so
the kernel sees q (B, S, D), k (B, T, D), v (B, T, E). Per chunk of the batch:
scores = matmul(q, k, b_trans=True) * scale on the cube (k read as stored), the softmax over the
keys on the vector unit (max subtracted, fp32), then matmul(probs, v) on the cube. Each matmul
gets its own cube tiles, set right before it (ATTN.reset-cube-tiles): the first is S x D x T,
the second S x T x E. Half-precision inputs give fp32 scores and a fp32 softmax (as torch
computes them); v is widened to fp32 for the second product (rounding the probabilities to fp16
instead put 199 of 5920 outputs of a (4, 37, 64, 40) case over the fp16 limit, measured), whose
fp32 result is rounded once into the output. Any sequence length works, an odd one included: the
cube and vec tiles may be larger than an axis.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, dims_list, name
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.codegen.pattern import Pattern, main_tile_needs
from pypto_tui.codegen.spec import KernelSpec, Scalar, TensorParam
from pypto_tui.errors import Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs, TileRole

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry


def sdpa_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The vec tile is for the fp32 scores (B, S, T), reduced along the keys (ops.toml gives the
    softmax's live buffers); the cube for S x D x T, a second cube for S x T x E; the loop along
    the batch."""
    base = main_tile_needs(c, dims, g, kb)
    if len(dims.kernel_shapes) < 3 or any(len(s) != 3 for s in dims.kernel_shapes[:3]):
        return base
    (bh, s, d), (_, t, _), (_, _, e) = dims.kernel_shapes[:3]
    data = kb.op_data(c.op)
    scores = (bh, s, t)
    role = TileRole("main", "TILE_SHAPE", scores, "fp32", 2, live_buffers=data.live_buffers, min_rows=data.min_rows)
    # the second product runs in fp32 (the probabilities and v widened), as torch computes it; the
    # cube search (B.cube-fill-cores) was measured on plain matmuls, not on products per head
    return replace(base, tiles=(role,), cube=(s, d, t), more_cubes=(("values", (s, t, e), "fp32"),),
                   cube_dtype=g.dtype, loop_axis=0, loop_why="auto", loop_shape=scores, cube_batch=None)


def _scale(b: Builder) -> tuple[Stmts, list[Scalar]]:
    """1/sqrt(d) computed in the factory, or the task's scale (a factory scalar)."""
    value = b.ctx.contract.op_args.get("scale")
    if value is None:
        return b.fwd("SCALE = d ** (-0.5)"), []
    return [], [b.scalar("SCALE", value, init_key=b.ctx.task.op_arg_source("scaled_dot_product_attention", "scale"))]


@cites("ATTN.sdpa", "ATTN.reset-cube-tiles", "B.matmul-cube-tiles")
def build_sdpa(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    if len(c.operands) != 3 or ctx.dims.reshape != "leading_batch" or ctx.main is None or ctx.plan.cube is None:
        raise Unsupported("attention is scaffolded on (batch, seq, dim) query, key and value")
    q, k, v = (o.name for o in c.operands)
    dt = ctx.dtype
    half = dt in ("fp16", "bf16")
    loop = ctx.loop
    b.pattern = "attention"
    b.summary = ("scaled dot-product attention: matmul(q, k, b_trans=True) * scale, softmax over the keys, "
                 "matmul with v" + (f", {dt} inputs with a fp32 softmax" if half else "")
                 + (", looping along batch * heads" if loop else ""))
    scores_cube = b.cube_constants()
    values_cube = b.cube_constants("values", "fp32")
    tile = b.tile_constant(ctx.main, "the fp32 scores (batch, queries, keys)",
                           loop_note="handled by the pypto.loop below (LOOP_COUNT)" if loop else None)
    prelude, scalars = _scale(b)
    f32 = Ex.raw(b.pdtype("fp32"), False)
    low = Ex.raw(b.pdtype(dt), False)

    def fill(qv: str, kv: str, vv: str) -> dict[str, object]:
        values = call("cast", Ex.name(vv), f32) if half else Ex.name(vv)
        out = call("matmul", Ex.name("probs"), values, f32)
        return {"q": Ex.name(qv), "k": Ex.name(kv), "scale": Ex.name("SCALE", tensor=False), "f32": f32,
                "scores_m": scores_cube[0], "scores_k": scores_cube[1], "scores_n": scores_cube[2],
                "values_m": values_cube[0], "values_k": values_cube[1], "values_n": values_cube[2],
                "value": call("cast", out, low) if half else out, "out": name("out")}

    if loop is None:
        body = b.tmpl("attention", tile=tile, **fill(q, k, v))
    else:
        def step(size: str, off: str, suffix: str) -> Stmts:
            qc, kc, vc = f"{q}_{suffix}", f"{k}_{suffix}", f"{v}_{suffix}"
            offs = [off, 0, 0]
            views = (b.view(qc, q, [size, "s", "d"], offs) + b.view(kc, k, [size, "t", "d"], offs)
                     + b.view(vc, v, [size, "t", "e"], offs))
            return b.tmpl("attention_step", views=views, offsets=dims_list(offs), **fill(qc, kc, vc))

        loop_prelude, body = b.chunked_loop("bh", step, setup=b.tmpl("vec_setup", tile=tile))
        prelude += loop_prelude
    spec = KernelSpec(
        factory="create_sdpa_kernel", kernel="sdpa_kernel", dims=["bh", "s", "t", "d", "e"], scalars=scalars,
        inputs=[TensorParam(q, ("bh", "s", "d"), dt), TensorParam(k, ("bh", "t", "d"), dt),
                TensorParam(v, ("bh", "t", "e"), dt)],
        output=TensorParam("out", ("bh", "s", "e"), c.output_dtype or dt), prelude=prelude, body=body,
        doc=f"{b.summary} (ATTN.sdpa, ATTN.reset-cube-tiles).",
    )
    b.add_kernel(spec)
    rank = len(c.operands[0].shape or ())
    for o in (q, k, v):
        b.assert_rank(o, rank)
    names = [b.prepare(o, [b.expr("-1"), b.expr("{o}.shape[-2]", o=name(o)), b.expr("{o}.shape[-1]", o=name(o))],
                       "3d") for o in (q, k, v)]
    b.unpack_dims(names[0], ["bh", "s", "d"])
    b.unpack_dims(names[2], ["bh_v", "t", "e"])
    b.call_kernel(spec, names)
    lead = [b.expr("{q}.shape[{i}]", q=name(q), i=Ex.num(i)) for i in range(rank - 2)]
    b.forward.result = b.expr("out.reshape({args})", args=[cst.Arg(x) for x in [*lead, name("s"), name("e")]])


PATTERNS = (Pattern("attention", ("attention",), build_sdpa, ("ATTN.sdpa", "ATTN.reset-cube-tiles"),
                    ops=("scaled_dot_product_attention",), needs=sdpa_needs),)
