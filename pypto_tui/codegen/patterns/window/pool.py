"""The main kernels of a pool: the max or sum over the taps' views in blocks of planes, the
band matmul of an average pool along W, and the count map of a padded average pool
(POOL.tap-views, POOL.plane-blocks, POOL.band-matmul, POOL.avg-divisor)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, literal, name
from pypto_tui.codegen.patterns.window.emit import (
    Names,
    block_loop,
    dim_names,
    expr,
    expr_list,
    factory_prelude,
    product,
    set_tile,
    tap_indices,
    tap_window,
    tensor_param,
)
from pypto_tui.codegen.spec import Constant, KernelSpec, TensorParam
from pypto_tui.findings import cites

if TYPE_CHECKING:
    from pypto_tui.window import WindowPlan


# ------------------------------------------------------------------------------------ pooling
@cites("POOL.tap-views", "POOL.avg-divisor", "POOL.plane-blocks")
def pool_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, win: Any, win4: Any, src: str,
                 unpack: Stmts) -> None:
    spec = plan.spec
    nd = plan.nd
    # a max as a compare and a select (POOL.tap-views): exact, -inf padding included, and the cost model
    # prices pypto.maximum at about ten times the select; the window role counts the select's buffers
    combine = "acc + win" if spec.kind != "max_pool" else "pypto.where(pypto.gt(win, acc), win, acc)"
    taps = [f"TAP_{a}[t]" for a in nm.L]
    planes = plan.plane_blocks  # POOL.plane-blocks: PLANES planes per item
    ch = "PLANES" if planes else "1"
    chain = tap_window(b, plan, nm, "xq", ch, "plane", taps, win, win if nd == 3 else win4)
    axes = b.tmpl("pool_axis", acc=name("acc"), taps=name("TAPS"), window=chain, combine=expr(combine))
    setup: Stmts = tap_indices(b, plan, nm)
    if setup:
        setup.append(set_tile(win))
    store: Stmts = []
    value: cst.BaseExpression
    if spec.kind == "max_pool":
        value = name("acc")
    elif plan.divisor is not None:
        value = expr("acc * INV_COUNT")
    else:
        setup += count_map(b, plan, nm)
        value = expr("acc * scale")
        store += b.tmpl("window_view", dst=name("scale"), src=name("recip"), shape=expr_list(nm.out_block("1")),
                        offsets=expr_list(nm.out_offsets("0")))
    store += b.tmpl("conv_store", value=value, offsets=expr_list(nm.out_offsets("plane")), out=name("out"))
    first = expr(PLANE_FIRST if planes else "it // BLOCKS")
    body = b.tmpl("pool_taps", tile=win, setup=setup, plane=first, axes=axes, store=store)
    extra = [f"UNIT = {nm.unit()}", *(plane_blocks(b, plan) if planes else ["ITEMS = n * c * BLOCKS"])]
    if spec.kind == "avg_pool" and plan.divisor is not None:
        extra.append(f"INV_COUNT = 1.0 / {plan.divisor!r}")
    elif spec.kind == "avg_pool":
        for i, a in enumerate(nm.L):
            if spec.count_include_pad:  # the padding counts, positions past it (ceil_mode) do not
                extra += [f"COUNT_A_{a} = 0",
                          f"COUNT_B_{a} = min({nm.sizes[i]} + PADDING[{i}][0] + PADDING[{i}][1], {nm.q[i]})"]
            else:
                extra += [f"COUNT_A_{a} = {nm.lo[i]}", f"COUNT_B_{a} = {nm.sizes[i]}"]
    divisor = ("" if spec.kind != "avg_pool" else f", then x 1/{plan.divisor:g} (POOL.avg-divisor)"
               if plan.divisor is not None else ", then x 1/count per position (POOL.avg-divisor)")
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(nd), scalars=[],
        inputs=[tensor_param("xq", nm.planes_shape(nm.prepared()), b)],
        output=tensor_param("out", nm.out_shape("c"), b),
        prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"{spec.describe()} by taps (POOL.tap-views): per item ("
             + ("a block of PLANES (image, channel) planes, POOL.plane-blocks" if planes else
                "one (image, channel) plane") + ") and block of "
             f"output rows (CONV.row-blocks), a {'max' if spec.kind == 'max_pool' else 'sum'} over the window's "
             f"taps, each one strided view of the input{divisor}."),
    )
    b.add_kernel(kspec)
    b.call_kernel(kspec, [src])


# ------------------------------------------------------------------------------------ band matmul
@cites("POOL.band-matmul", "B.matmul-cube-tiles", "CONV.pad-blocks")
def band_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, band_tile: Any, banded_tile: Any, rows: str,
                 unpack: Stmts) -> str:
    """An average pool's W axis on the cube (POOL.band-matmul): the band (W x OWP) is built once, then
    per block of BAND_PLANES planes their input rows times the band are stored H-padded, (n * c, QH,
    OWP), the padding rows zero slabs. Returns the banded planes' name in forward."""
    cube_m, cube_k, cube_n = b.cube_constants()
    b.add_constant(Constant(
        "BAND_PLANES", plan.band_planes,
        [f"BAND_PLANES: the band kernel multiplies {plan.band_planes} plane(s) of rows per iteration, each "
         "stored at row LO_H of its H-padded plane (POOL.band-matmul, CONV.pad-blocks)."],
        ("POOL.band-matmul",), {}))
    dt = b.pdtype()

    def block(size: str, off: str, suffix: str) -> Stmts:
        return b.tmpl("pool_band_block", rows=name(f"rows_{suffix}"), size=expr(size), off=expr(off), dt=dt,
                      tile=banded_tile)

    loop_sizes, loop = block_loop(b, "BAND", "n * c", "ceil_div(n * c, BAND_PLANES)", block)
    body = [*b.tmpl("pool_band", tile=band_tile, cube_m=cube_m, cube_k=cube_k, cube_n=cube_n), *loop]
    spec = KernelSpec(
        factory=f"create_{op}_band_kernel", kernel=f"{op}_band_kernel", dims=dim_names(plan.nd), scalars=[],
        inputs=[TensorParam("x_rows", (expr("n * c * h"), expr("w")), b.ctx.dtype)],
        output=TensorParam("out", (expr("n * c"), expr(nm.q[0]), expr("OWP")), b.ctx.dtype),
        prelude=[*factory_prelude(unpack, [f"INV_COUNT = 1.0 / {plan.divisor!r}"]), *loop_sizes], body=body,
        doc=(f"{plan.spec.describe()}, its W axis as a matmul (POOL.band-matmul): every input row times the "
             f"band (W x OWP), whose column o holds 1/{plan.divisor:g} over output column o's window; per block "
             "of BAND_PLANES planes, stored H-padded for the row taps."),
    )
    b.add_kernel(spec)
    b.call_kernel(spec, [rows], out="banded")
    return "banded"


@cites("POOL.band-matmul", "POOL.tap-views", "POOL.plane-blocks")
def band_taps_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, win: Any, src: str, unpack: Stmts) -> None:
    """The H taps over the banded planes (POOL.band-matmul): per block of planes and block of output
    rows, the sum of KERNEL[0] plain row views (P, ROWS, OW), no gather; the band holds the divisor."""
    step = nm.step(0)
    row = f"r0 * {step} + t" if step > 1 else "r0 + t"  # an average pool has no dilation
    window = [set_tile(win), *b.tmpl("window_view", dst=name("win"), src=name("xq"),
                                      shape=expr_list(["PLANES", "ROWS", nm.o[1]]),
                                      offsets=expr_list(["plane", row, "0"]))]
    axes = b.tmpl("pool_axis", acc=name("acc"), taps=expr("KERNEL[0]"), window=window, combine=expr("acc + win"))
    store = b.tmpl("conv_store", value=name("acc"), offsets=expr_list(["plane", "r0", "0"]), out=name("out"))
    body = b.tmpl("pool_taps", tile=win, setup=[], plane=expr(PLANE_FIRST), axes=axes, store=store)
    extra = plane_blocks(b, plan)
    kspec = KernelSpec(
        factory=f"create_{op}_kernel", kernel=f"{op}_kernel", dims=dim_names(plan.nd), scalars=[],
        inputs=[tensor_param("xq", ["n * c", nm.q[0], "OWP"], b)], output=tensor_param("out", nm.out_shape("c"), b),
        prelude=factory_prelude(unpack, extra), body=body,
        doc=(f"{plan.spec.describe()}: the H taps over the banded planes (POOL.band-matmul): per item (a block "
             "of PLANES planes, POOL.plane-blocks) and block of output rows, the sum of KERNEL[0] plain row views."),
    )
    b.add_kernel(kspec)
    b.call_kernel(kspec, [src])


# a block of planes starts at a multiple of PLANES; where PLANES does not divide n * c (other sizes
# than planned), the last block is shifted back over planes already written, as the row blocks are
PLANE_FIRST = "((it // BLOCKS) * PLANE_LAST) // PLANE_SPREAD"


@cites("POOL.plane-blocks")
def plane_blocks(b: Builder, plan: WindowPlan) -> list[str]:
    """PLANE_BLOCK, and the loop sizes of a pool kernel over blocks of planes (POOL.plane-blocks):
    its items are the blocks of N*C planes times the blocks of output rows."""
    b.add_constant(Constant(
        "PLANE_BLOCK", plan.channels_per_item,
        [f"PLANE_BLOCK: (image, channel) planes per item of the pool's loop (POOL.plane-blocks): up to "
         f"{plan.channels_per_item}, the taps' views and the tile lead with them; the last block of N*C "
         "planes is shifted back where they do not divide it"
         + (" (a plane this large is a block on its own)." if plan.channels_per_item == 1 else ".")],
        ("POOL.plane-blocks",), {"planes": plan.channels_per_item}))
    return ["PLANES = min(PLANE_BLOCK, n * c)", "PLANE_BLOCKS = ceil_div(n * c, PLANES)",
            "PLANE_LAST = n * c - PLANES", "PLANE_SPREAD = max(PLANE_BLOCKS - 1, 1)", "ITEMS = PLANE_BLOCKS * BLOCKS"]


@cites("POOL.avg-divisor")
def count_map(b: Builder, plan: WindowPlan, nm: Names) -> Stmts:
    """`recip` (1, O0, UNIT) (1-D: (1, 1, O)): 1 / the count of each window's counted positions,
    built before the loop from one count vector per axis (the count is separable)."""
    out: Stmts = []
    dt = b.pdtype()
    for i, a in enumerate(nm.L):
        out += b.tmpl("pool_count_axis", count=name(f"count_{a.lower()}"), a=name(f"COUNT_A_{a}"),
                      b=name(f"COUNT_B_{a}"), q=name(nm.q[i]), o=name(nm.o[i]), s=literal(nm.step(i)),
                      taps=literal(plan.axes[i].kernel), dt=dt)
    counts = [f"count_{a.lower()}" for a in nm.L]
    if plan.nd == 1:
        out += b.tmpl("window_reshape", dst=name("counts"), src=name(counts[0]), shape=expr_list(["1", "1", nm.o[0]]))
        total = "counts"
    else:
        inner = counts[-1]
        shape_inner = nm.o[-1]
        for i in range(plan.nd - 2, -1, -1):  # outer axis i times everything after it, as (1, O_i, rest)
            rest = product(nm.o[i + 1:])
            left = f"pypto.expand_clone(pypto.reshape({counts[i]}, [1, {nm.o[i]}, 1]), [1, {nm.o[i]}, {rest}])"
            right = f"pypto.expand_clone(pypto.reshape({inner}, [1, 1, {shape_inner}]), [1, {nm.o[i]}, {rest}])"
            out += b.tmpl("window_reshape", dst=name("counts"), src=expr(f"{left} * {right}"),
                          shape=expr_list(["1", "1", f"{nm.o[i]} * {rest}"] if i > 0 else ["1", nm.o[0], rest]))
            inner, shape_inner = "counts", f"{nm.o[i]} * {rest}"
        total = "counts"
    if nm.natural:
        out += b.tmpl("window_reshape", dst=name("counts"), src=name(total), shape=expr_list(["1", *nm.o]))
        total = "counts"
    out += b.fwd("recip = pypto.reciprocal({t})", t=expr(total))
    return out
