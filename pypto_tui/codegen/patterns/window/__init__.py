"""Convolutions and pooling: the im2col plan (pypto_tui.window) written as pypto 0.2.0 kernels.

`pypto.conv` does not run on a CPU in 0.2.0 (CONV.not-runnable). A module here has up to two
kernels and one helper:

- `<op>_geometry(n, c, ...)`: the sizes for the input dims forward sees (torch's output-size
  formulas, the prepared extents, the blocks of output rows); forward and both factories read it;
- a pre kernel that pads (zeros, -inf for a max pool) and zero-inserts (transposed convs) one
  (image, channel) plane per iteration, when the op needs it (padding, strides, ceil_mode);
- the main kernel: one `pypto.loop` over items x blocks of output rows (CONV.row-blocks), and per
  item the columns and one matmul (CONV.im2col), the sum of tap x weight (CONV.depthwise-taps) or
  the max/sum over a pool's taps (POOL.tap-views).

Inputs are (N*C, *spatial) planes (a 1-D signal (N*C, 1, L)), so one image's channels are
consecutive and a group's channels one view; the output is (N*OC, O0, rest) (1-D: (N*OC, 1, O)).
ModelNew builds the task's own modules (CONV.weights-from-module) and forward passes
`self.<conv>.weight` and `.bias` to the kernel.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import libcst as cst

from pypto_tui.codegen.builder import Builder, Stmts, literal, name
from pypto_tui.codegen.pattern import Pattern
from pypto_tui.codegen.patterns.window.conv import (
    depthwise_kernel,
    flat_depthwise_kernel,
    flat_kernel,
    im2col_kernel,
    pointwise_kernel,
)
from pypto_tui.codegen.patterns.window.emit import (
    CUBE_ROWS,
    MODULE_GLOBALS,
    PHASE_COLUMNS_RUN,
    Names,
    axis_letters,
    dim_names,
    expr,
    unpack_geometry,
)
from pypto_tui.codegen.patterns.window.pool import band_kernel, band_taps_kernel, pool_kernel
from pypto_tui.codegen.patterns.window.prepare import (
    insert_chain,
    pad_blocks_kernel,
    phase_blocks_kernel,
    phase_planes_kernel,
    prepare_kernel,
)
from pypto_tui.codegen.spec import Constant
from pypto_tui.errors import InputError, Unsupported
from pypto_tui.findings import cites
from pypto_tui.plan import Needs, TileRole

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import Geometry
    from pypto_tui.vocabulary import LoopWhy
    from pypto_tui.window import WindowPlan

RULES = ("CONV.im2col", "CONV.not-runnable", "CONV.stride-view", "CONV.transposed", "CONV.depthwise-taps",
         "CONV.row-blocks", "CONV.weights-from-module", "CONV.assemble-whole", "CONV.window-tile",
         "CONV.pointwise-stage", "CONV.flat-taps", "CONV.flat-phases", "CONV.depthwise-flat", "CONV.pad-blocks",
         "CONV.insert-matmul", "CONV.insert-rows", "CONV.zeros-allocated")
POOL_RULES = ("POOL.tap-views", "POOL.max-pad-inf", "POOL.avg-divisor", "POOL.depth-slices", "POOL.phase-split",
              "POOL.plane-blocks", "POOL.band-matmul",
              "CONV.stride-view",
              "CONV.row-blocks", "CONV.assemble-whole", "CONV.not-runnable")


# ------------------------------------------------------------------------------------ planning
def window_plan(dims: DimPlan) -> WindowPlan:
    """The im2col plan the dimension step made with its layout (Unsupported if it made none): the
    pattern's needs and its code read that one plan, they never plan it again."""
    if dims.window is None:
        raise Unsupported(f"the dimension plan's strategy '{dims.strategy}' is not a conv or pool layout")
    return dims.window


def _window_shape(plan: WindowPlan) -> tuple[int, ...]:
    """One plane's window views over all output rows, as the kernel's 3-D window ops see them: (1,
    rows*stride, the rest of one view row) (1-D: (1, 1, rows*stride)). The leading 1 keeps channels
    out of the tile: 0.2.0 copies whole blocks when a window reshape merges tiled channels with
    rows, and overflows the unified buffer (CONV.window-tile)."""
    a0 = plan.axes[0]
    planes = plan.channels_per_item if plan.strategy == "pool-taps" else 1  # POOL.plane-blocks
    if plan.nd == 1:
        return (planes, 1, plan.rows * a0.step)
    lead = plan.rows if plan.phases(0) else plan.rows * a0.step  # POOL.phase-split: rows read plain
    return (planes, lead, plan.row_elements // a0.step)


def window_needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    """The tiles (the im2col columns, the window views, a 4-D window tile for 3-D ops, the pre
    kernel's planes), the matmul for the cube, and a loop over blocks of output rows."""
    try:
        plan = window_plan(dims)
    except Unsupported as exc:
        raise InputError(f"no im2col plan: {exc}") from None
    dtype = g.dtype
    data = kb.op_data(plan.spec.kind)
    a0 = plan.axes[0]
    win = _window_shape(plan)
    loop_axis = 2 if plan.nd == 1 else 1
    select = plan.spec.kind == "max_pool"  # its taps combine with a select (pool_kernel)
    window = TileRole("window", "WINDOW_TILE" if plan.strategy == "im2col" else "TILE", win, dtype, None,
                      reducing=False, live_buffers=data.live_buffers,
                      min_tile=None if plan.nd == 3 else _gather_floor(plan, len(win)), select_mask=select)
    if plan.strategy == "im2col" and plan.flat:
        # CONV.flat-taps: the columns span whole prepared rows (QW positions each; a phase plane's PW,
        # CONV.flat-phases) and no window view is copied, so the columns are the one vec tile; the loop
        # cuts them in whole rows
        qw = plan.flat_pitch
        # CONV.flat-phases: a few input channels give many short views; the tile keeps long runs of them
        # (KernelBench 50, 3 channels: the main kernel 226.5 us at (1, 64, 256), 82.3 at (1, 8, 2048))
        align = plan.limits.align_elements
        run = min(PHASE_COLUMNS_RUN, math.ceil(plan.rows * qw / align) * align) if plan.phase_planes else None
        columns = TileRole("columns", "TILE", (plan.channels_per_item, plan.taps, plan.rows * qw), dtype,
                           None, reducing=False, live_buffers=data.live_buffers, strict_align=True,
                           min_tile=None if run is None else (1, 1, run))
        # each output row leaves as a computed (OCG, OW) tensor (CONV.assemble-whole): its own 2-D tile
        store = TileRole("store", "STORE_TILE", (plan.spec.out_per_group, plan.row_unit), dtype, None,
                         reducing=False)
        roles, loop_axis, unit = [columns, store], 2, qw
    elif plan.strategy == "im2col":
        columns = TileRole("columns", "TILE", (plan.channels_per_item, plan.taps, plan.rows * plan.row_unit), dtype,
                           None, reducing=False, live_buffers=data.live_buffers, strict_align=True)
        roles, loop_axis, unit = [columns, window], 2, plan.row_unit
    elif plan.flat:
        # CONV.depthwise-flat: all of an image's planes, whole prepared rows (QW positions each); each
        # output row leaves as a computed (C, 1, OW) tensor (CONV.assemble-whole)
        qw = plan.axes[1].prepared
        flat = kb.op_data("conv_depthwise_flat")  # its live tiles, measured (ops.toml)
        planes = TileRole("window", "TILE", (plan.channels_per_item, 1, plan.rows * qw), dtype, None,
                          reducing=False, live_buffers=flat.live_buffers)
        store = TileRole("store", "STORE_TILE", (plan.channels_per_item, 1, plan.row_unit), dtype, None,
                         reducing=False)
        roles, loop_axis, unit = [planes, store], 2, qw
    else:
        roles, unit = [window], 1 if plan.phases(0) else a0.step
    full_window: tuple[int, ...] | None = None
    if plan.nd == 3:
        full_window = (win[0], plan.rows * a0.step, plan.view_extent(1), plan.view_extent(2))
        if plan.strategy == "pool-taps":  # a 3-D pool's ops are all 4-D: its one tile is 4-D
            depth = 1 if plan.depth_slices else plan.rows * a0.step
            roles[0] = TileRole("window", "TILE", (win[0], depth, *full_window[2:]), dtype, None,
                                reducing=False, live_buffers=data.live_buffers, min_tile=_gather_floor(plan, 4),
                                select_mask=select)
        else:
            roles.append(TileRole("window4", "WINDOW4_TILE", full_window, dtype,
                                  None, reducing=False, min_tile=_gather_floor(plan, 4)))
    elif plan.depth_slices:  # a 2-D pool's one output row per iteration: its views are one row (P, 1, OW*SW)
        full_window = win
        roles[0] = TileRole("window", "TILE", (win[0], 1, win[2]), dtype, None, reducing=False,
                            live_buffers=data.live_buffers, min_tile=_gather_floor(plan, len(win)), select_mask=select)
    if plan.band_matmul:  # POOL.band-matmul: the H taps read plain rows (P, ROWS, OW) of the banded planes
        a1 = plan.axes[1]
        full_window = (win[0], plan.rows, a1.out)
        roles[0] = TileRole("window", "TILE", (win[0], 1, a1.out) if plan.depth_slices else full_window, dtype,
                            None, reducing=False, live_buffers=data.live_buffers)
        owp, h = plan.band_width, a0.size
        unit = 1  # the row views count output rows
        roles.append(TileRole("band", "BAND_TILE", (a1.size, owp), dtype, None, reducing=False, strict_align=True))
        roles.append(TileRole("banded", "BANDED_TILE", (plan.band_planes, h, owp), dtype, None, reducing=False,
                              strict_align=True))
    more_cubes: tuple[tuple[str, tuple[int, int, int], str | None], ...] = ()
    if plan.insert_matmul_shape is not None:  # CONV.insert-matmul: the last axis's zeros by a matmul
        # the spread (B, B*S) under a (B, B) tile: pypto 0.2.0's Pass_28_InferParamIndex got 16 elements
        # of the chunk's product wrong with (16, 32) over KernelBench 79's spread (stride 2), and 8 with
        # (8, 16); (16, 16), (16, 8) and (32, 16) kept every pass (values right in all five)
        block = plan.insert_block
        roles.append(TileRole("insert", "INSERT_TILE", (block, block), dtype, None, reducing=False,
                              strict_align=True))
        more_cubes = (("insert", plan.insert_matmul_shape, None),)
    if plan.inserts_flat:  # CONV.insert-rows: each earlier axis's zeros as whole rows appended to each row
        for i in range(plan.nd - 1):
            a = plan.axes[i]
            if a.insert <= 1:
                continue
            inner = math.prod(b.size * b.insert for b in plan.axes[i + 1:])
            rows = plan.spec.batch * plan.spec.in_channels * math.prod(b.size for b in plan.axes[:i + 1])
            chunk = max(1, min(rows, plan.insert_chunk_elements // (a.insert * inner)))
            letter = axis_letters(plan.nd)[i]
            roles.append(TileRole(f"insert_{letter.lower()}", f"INSERT_{letter}_TILE", (chunk, a.insert * inner),
                                  dtype, None, reducing=False))
    if _prepares(plan):
        q = tuple(a.prepared for a in plan.axes)
        per_block = plan.prepare_planes if plan.pads_in_blocks else 1  # CONV.pad-blocks: planes per iteration
        roles.append(TileRole("prepare", "PREP_TILE", (per_block, 1, q[0]) if plan.nd == 1 else (per_block, *q), dtype,
                              None, reducing=False, strict_align=True, min_tile=_phase_floor(plan)))
    # the cube takes the im2col matmul, or the pointwise stage's (a depthwise conv has no other), or
    # an average pool's band (POOL.band-matmul: a block of planes' rows by the band, its N the band's)
    matmul = plan.matmul or plan.pointwise_matmul
    cube = plan.band_matmul_shape
    if matmul is not None:
        M, K, _ = matmul
        cube = (M, K, max(plan.row_unit, math.ceil(plan.rows / CUBE_ROWS) * plan.row_unit))
    max_chunk = kb.limits.max_matmul_inner if plan.strategy == "im2col" else None
    if plan.pointwise_matmul is not None:
        # the pointwise stage: a 2-D tile for its block (OC2, ROWS * UNIT); its positions are the
        # matmul's inner axis, counted here in the loop axis's elements
        roles.append(TileRole("pointwise", "PW_TILE", (M, plan.rows * plan.row_unit), dtype, None, reducing=False))
        limit = kb.limits.max_matmul_inner
        max_chunk = None if limit is None else max(limit // plan.row_unit, 1) * unit
    note = (f"blocks of output rows, repeated for {plan.repeat} item(s) ({plan.spec.batch} image(s) x "
            f"{plan.items_per_image} {'group(s)' if plan.strategy == 'im2col' else 'channel(s)'})")
    # The columns (or the pointwise stage's block) are the matmul's right operand: their positions are
    # its inner axis (HW.matmul-inner-axis).
    why: LoopWhy = "auto"
    loop_shape = None
    if plan.depth_slices:  # one output depth slice per iteration over the full window (POOL.depth-slices)
        why, loop_shape = "slices", full_window
        what = data.loop_note or "one output depth slice per iteration"
        note = f"{what}, repeated for {plan.repeat} item(s)"
    # a 2-D conv's im2col matmul runs once per item (image and group) and block of rows: at least
    # `repeat` products, which the pack's cube search counts (B.cube-fill-cores: KernelBench 62 266 ->
    # 178 us, 80 268 -> 157). Transposed and 3-D convs keep the starting point: their few output
    # channels made the search pick (16 x 512) tiles, slower on 58 (384 -> 595 us) and 78 (179 -> 201);
    # so do the pointwise stage and a pool's band (not measured)
    searched = plan.matmul is not None and plan.strategy == "im2col" and plan.nd == 2 and not plan.spec.transposed
    batch = plan.repeat if searched else None
    return Needs(tuple(roles), cube, loop_axis, why, note, loop_shape, unit, max_chunk, tuple(plan.rows_table()),
                 more_cubes=more_cubes, cube_batch=batch)


def _gather_floor(plan: WindowPlan, rank: int) -> tuple[int, ...] | None:
    """The window views' tile floor: 2 on every axis a stride is gathered along (HW.gather-tile).
    Spatial axis i is tile axis i + 1 (a 1-D signal's one axis is the last of three)."""
    floor = [1] * rank
    for i in range(plan.nd):
        if plan.gathers(i):
            floor[2 if plan.nd == 1 else i + 1] = 2
    return tuple(floor) if any(f > 1 for f in floor) else None


def _phase_floor(plan: WindowPlan) -> tuple[int, ...] | None:
    """The phase pre kernel's tile floor (POOL.phase-split): it gathers along its phase-split axes, so 2
    on each (HW.gather-tile), and a gather along the last axis wants the whole width in one tile: at
    (2, 4, 8, 128, 32) the 3-D dilated max pool fixture's PREP_TILE (8, 2, 64, 16) cut the 32 columns
    in two and lost pass-verify's Pass_28 and Pass_36 rows at that GATHER (pypto 0.2.0)."""
    if plan.phase_planes:  # CONV.flat-phases: the phase kernel gathers rows and columns of whole rows
        return (1, 2 if plan.axes[0].step > 1 else 1, plan.axes[-1].prepared)  # QW: whole 32-byte blocks
    if not any(plan.phases(i) for i in range(plan.nd)):
        return None
    floor = [1] + [2 if plan.phases(i) else 1 for i in range(plan.nd)]
    if plan.phases(plan.nd - 1):
        floor[-1] = plan.axes[-1].prepared
    return tuple(floor)


def _prepares(plan: WindowPlan) -> bool:
    """A pre kernel builds the prepared input: padding or zero insertion, or a stride or ceil_mode
    (at some input sizes the last block's strided views need room past the input)."""
    if plan.band_matmul:  # the band kernel pads H and the band stands for W's padding
        return False
    return plan.prepare or any(a.step > 1 for a in plan.axes) or plan.spec.ceil_mode


# ------------------------------------------------------------------------------------ the module
@cites(*RULES, *POOL_RULES)
def build_window(b: Builder) -> None:
    ctx = b.ctx
    c = ctx.contract
    plan = window_plan(ctx.dims)
    spec = plan.spec
    if len(c.operands) < 1 or c.op_args.get("fused") or c.op_args.get("composite"):
        raise Unsupported(c.reason or f"the {c.family} is part of a larger expression: not scaffolded")
    if c.reason and not c.supported:
        raise Unsupported(c.reason)
    if spec.is_conv and not spec.weight_attr:
        raise Unsupported("the conv's module attribute is unknown: only nn.Conv*d modules called in forward "
                          "are scaffolded")
    nm = Names(plan)
    x = c.operands[0].name
    op = _op_name(spec)
    b.pattern = "window"
    b.summary = f"{spec.describe()}: {plan.strategy_text()}"
    _constants(b, plan, nm)
    tiles = {t.role.name: t for t in ctx.plan.tiles}
    loop_note = "handled by the pypto.loop below (LOOP_COUNT)"
    if plan.strategy == "im2col" and plan.flat:  # CONV.flat-taps: no window view is copied
        main = win = b.tile_constant(tiles["columns"], "the column buffer (CG, TAPS, positions of whole rows)",
                                     loop_note=loop_note)
        b.tile_constant(tiles["store"], "one output row of an item (OCG, OW), computed before it is stored")
    elif plan.strategy == "im2col":
        main = b.tile_constant(tiles["columns"], "the column buffer (CG, TAPS, positions)", loop_note=loop_note)
        win = b.tile_constant(tiles["window"], "one plane's window views (CONV.window-tile)", loop_note=loop_note)
    elif plan.flat:  # CONV.depthwise-flat
        main = win = b.tile_constant(tiles["window"], "an image's planes read flat (C, 1, positions of whole rows)",
                                     loop_note=loop_note)
        b.tile_constant(tiles["store"], "one output row of every plane (C, 1, OW), computed before it is stored")
    else:
        main = win = b.tile_constant(tiles["window"], "one plane's window views (CONV.window-tile)",
                                     loop_note=loop_note)
    win4 = b.tile_constant(tiles["window4"], "the 4-D window views of a 3-D op") if "window4" in tiles else None
    prep = b.tile_constant(tiles["prepare"], "the prepared input planes") if "prepare" in tiles else None
    _loop_constant(b, plan)
    geometry = f"{op}_geometry"
    b.helpers += _geometry_helper(b, plan, nm, geometry)
    dims = dim_names(plan.nd)
    unpack = unpack_geometry(nm, geometry, dims)
    # forward: dims, geometry, the input as planes
    b.assert_rank(x, plan.nd + 2)
    b.unpack_dims(x, dims)
    b.forward.prepare += unpack
    if plan.band_matmul:  # POOL.band-matmul: the band kernel reads the input as rows (n * c * h, w)
        rows = b.prepare(x, [expr("n * c * h"), expr("w")], "rows")
        banded = band_kernel(b, plan, nm, op, b.tile_constant(tiles["band"], "the band's vec tile (W, OWP)"),
                              b.tile_constant(tiles["banded"], "a block of planes' banded rows (planes, h, OWP)"),
                              rows, unpack)
        band_taps_kernel(b, plan, nm, op, win, banded, unpack)
    else:
        src = _prepared_input(b, plan, nm, op, tiles, prep, x, dims, unpack)
        _main_kernel(b, plan, nm, op, main, win, win4, src, unpack)
    if spec.pointwise:
        pointwise_kernel(b, plan, nm, op, b.tile_constant(tiles["pointwise"], "the pointwise stage's block"),
                          unpack)
    _model_modules(b, spec)
    channels = "PW_OUT_CHANNELS" if spec.pointwise else "OUT_CHANNELS" if spec.is_conv else "c"
    b.forward.result = expr(f"out.reshape(n, {channels}, {', '.join(nm.o)})")


def _prepared_input(b: Builder, plan: WindowPlan, nm: Names, op: str, tiles: dict[str, Any], prep: Any, x: str,
                    dims: list[str], unpack: Stmts) -> str:
    """The input as the main kernel reads it, forward's name for it: the planes, zero-inserted over the
    whole input first where the plan says so (CONV.insert-matmul, CONV.insert-rows), then prepared by
    the pre kernel the plan takes (stride phases, padded blocks, or one plane at a time)."""
    if plan.inserts_flat:
        planes = insert_chain(b, plan, nm, op, tiles, x, dims, unpack)
    else:
        planes = b.prepare(x, [expr(s) for s in (["n * c", "1", dims[2]] if plan.nd == 1 else ["n * c", *dims[2:]])],
                           "planes")
    if prep is None:
        return planes
    if any(nm.phase):
        return phase_blocks_kernel(b, plan, nm, op, prep, planes, unpack)
    if plan.pads_in_blocks:
        padded = pad_blocks_kernel(b, plan, nm, op, prep, planes, unpack)
        return phase_planes_kernel(b, plan, nm, op, prep, padded, unpack) if plan.phase_planes else padded
    return prepare_kernel(b, plan, nm, op, prep, planes, unpack)


def _main_kernel(b: Builder, plan: WindowPlan, nm: Names, op: str, main: Any, win: Any, win4: Any, src: str,
                 unpack: Stmts) -> None:
    """The kernel that computes the op from the prepared input, by the plan's strategy."""
    if plan.strategy == "im2col" and plan.flat:
        flat_kernel(b, plan, nm, op, main, src, unpack)
    elif plan.strategy == "im2col":
        im2col_kernel(b, plan, nm, op, main, win, win4, src, unpack)
    elif plan.strategy == "depthwise-taps" and plan.flat:
        flat_depthwise_kernel(b, plan, op, main, src, unpack)
    elif plan.strategy == "depthwise-taps":
        depthwise_kernel(b, plan, nm, op, win, win4, src, unpack, out="mid" if plan.spec.pointwise else "out")
    else:
        pool_kernel(b, plan, nm, op, win, win4, src, unpack)


def _op_name(spec: Any) -> str:
    return (f"conv_transpose{spec.nd}d" if spec.transposed else f"conv{spec.nd}d") if spec.is_conv else \
        f"{spec.kind}{spec.nd}d"


def _constants(b: Builder, plan: WindowPlan, nm: Names) -> None:
    """The op's fixed parameters (contract op_args) and the tap offsets, as named constants."""
    s = plan.spec
    what = "the conv's" if s.is_conv else "the pool's"
    rule = "CONV.im2col" if s.is_conv else "POOL.tap-views"
    lines = [f"KERNEL, STRIDE, PADDING (low, high), DILATION: {what} parameters, fixed by get_init_inputs ({rule});",
             f"  {'; '.join(s.size_formulas())}."]
    b.add_constant(Constant("KERNEL", tuple(s.kernel), lines, (rule,), {"kernel": list(s.kernel)}))
    b.add_constant(Constant("STRIDE", tuple(s.stride), [], (rule,), {}))
    b.add_constant(Constant("PADDING", tuple(tuple(p) for p in s.padding), [], (rule,), {}))
    b.add_constant(Constant("DILATION", tuple(s.dilation), [], (rule,), {}))
    taps_rule = "CONV.transposed" if s.transposed else rule
    if s.transposed:
        b.add_constant(Constant("OUTPUT_PADDING", tuple(s.output_padding), [], ("CONV.transposed",), {}))
        b.add_constant(Constant("BASE", tuple(a.base for a in plan.axes), [], ("CONV.transposed",), {}))
    if s.is_conv:
        lines = [f"IN_CHANNELS, OUT_CHANNELS, GROUPS, CG = C/G, OCG = OC/G, TAPS = prod(KERNEL) ({rule}):",
                 f"  the implicit matmul per image and group is ({s.out_per_group} x {s.in_per_group * s.taps}) @ "
                 f"({s.in_per_group * s.taps} x positions)."]
        b.add_constant(Constant("IN_CHANNELS", s.in_channels, lines, (rule,), {}))
        b.add_constant(Constant("OUT_CHANNELS", s.out_channels, [], (rule,), {}))
        b.add_constant(Constant("GROUPS", s.groups, [], (rule,), {}))
        b.add_constant(Constant("CG", s.in_per_group, [], (rule,), {}))
        b.add_constant(Constant("OCG", s.out_per_group, [], (rule,), {}))
    if plan.phase_planes or any(plan.gathers(i) or plan.phases(i) for i in range(plan.nd)):
        rank = 4 if plan.nd == 3 else 3
        b.add_constant(Constant("INDEX_TILE", (1024, *([1] * (rank - 2)), 8),
                                ["INDEX_TILE: the tile of the strided axes' kept positions (pypto.arange, 1-D: its "
                                 "leading 1024 is the one used; the kernel's rank and a 32-byte last dim for the lint; "
                                 "CONV.stride-view)."], ("CONV.stride-view",), {}))
    if plan.band_matmul:  # POOL.band-matmul: the band takes W's taps, the row views H's (KERNEL[0] of them)
        return
    lines = [f"TAPS, TAP_*: the window's taps and each tap's offset along each axis ({taps_rule}"
             + ("; reverse order: the transposed conv's weights are not flipped)" if s.transposed else ")")]
    b.add_constant(Constant("TAPS", s.taps, lines, (taps_rule,), {}))
    offsets: list[list[int]] = [[] for _ in plan.axes]
    for t in range(s.taps):
        ks = _unravel(plan.taps - 1 - t if s.transposed else t, s.kernel)
        for i, (a, k) in enumerate(zip(plan.axes, ks, strict=True)):
            offsets[i].append(a.base + k * a.dilation)
    for i in range(plan.nd):
        b.add_constant(Constant(f"TAP_{nm.L[i]}", offsets[i], [], (taps_rule,), {}))


def _unravel(t: int, kernel: tuple[int, ...]) -> list[int]:
    out = []
    for k in reversed(kernel):
        out.append(t % k)
        t //= k
    return list(reversed(out))


@cites("CONV.row-blocks", "O2.loop-log-scale", "P6.loop-tail", "POOL.depth-slices")
def _loop_constant(b: Builder, plan: WindowPlan) -> None:
    """LOOP_COUNT: blocks of output rows per item, as the loop step chose it (1: no loop needed)."""
    loop = b.ctx.loop
    rows = plan.rows
    if plan.depth_slices:  # the loop step pinned one output slice per iteration (POOL.depth-slices)
        blocks = loop.count if loop is not None else 1
        lines = [f"LOOP_COUNT: one output slice per block (POOL.depth-slices): ROWS = 1, {blocks} block(s); the "
                 f"pypto.loop runs {plan.repeat} item(s) x {blocks} = {plan.repeat * blocks} iteration(s); each "
                 "tap's offset along the first spatial axis is a scalar, so no gather along it."]
        for f in loop.findings if loop is not None else ():
            lines.append(f"  {f.level} {f.rule}: {f.message}")
            b.findings.append(f)
        b.add_constant(Constant("LOOP_COUNT", blocks, lines, ("CONV.row-blocks", "POOL.depth-slices"),
                                {"rows": rows, "basic_batch": 1, "blocks": blocks, "items": plan.repeat,
                                 "iterations": plan.repeat * blocks,
                                 **({"auto_tiles_per_iter": loop.candidate.auto_tiles_per_iter} if loop else {})}))
        return
    if loop is None:
        lines = [f"LOOP_COUNT: 1 block of all {rows} output row(s) per item (P6.avoid-loops: no block loop needed); "
                 f"the pypto.loop runs over the {plan.repeat} item(s) (CONV.row-blocks)."]
        b.add_constant(Constant("LOOP_COUNT", 1, lines, ("CONV.row-blocks", "P6.avoid-loops"),
                                {"rows": rows, "basic_batch": rows, "iterations": plan.repeat}))
        return
    cand = loop.candidate
    bb = cand.basic_batch
    blocks = cand.num_iters
    tail = (f"; the last block starts at row {rows - bb} (a full block shifted back: {bb - cand.tail} row(s) "
            "recomputed, never read past the end)" if cand.has_tail else "")
    lines = [f"LOOP_COUNT: blocks of output rows per item ({loop.reason}; O2.loop-log-scale, CONV.row-blocks):",
             f"  ROWS = BASIC_BATCH = ceil_div({rows}, {loop.count}) = {bb}, {blocks} block(s){tail}; "
             f"the pypto.loop runs {plan.repeat} item(s) x {blocks} = {plan.repeat * blocks} iteration(s), "
             f"{cand.auto_tiles_per_iter} tile(s) of the main tensor per iteration."]
    for f in loop.findings:
        if f.level in ("warn", "error"):
            lines.append(f"  {f.level} {f.rule}: {f.message}")
            b.findings.append(f)
    b.add_constant(Constant("LOOP_COUNT", loop.count, lines, ("CONV.row-blocks", "O2.loop-log-scale", "P6.loop-tail"),
                            {"rows": rows, "basic_batch": bb, "blocks": blocks, "items": plan.repeat,
                             "iterations": plan.repeat * blocks, "auto_tiles_per_iter": cand.auto_tiles_per_iter}))


def _geometry_helper(b: Builder, plan: WindowPlan, nm: Names, fn: str) -> Stmts:
    s = plan.spec
    axes: Stmts = []
    template = "window_axis_transposed" if s.transposed else "window_axis_ceil" if s.ceil_mode else "window_axis"
    for i in range(plan.nd):
        axes += b.tmpl(template, o=name(nm.o[i]), q=name(nm.q[i]), lo=name(nm.lo[i]), hi=name(nm.hi[i]),
                       size=name(nm.sizes[i]), i=literal(i))
        if nm.phase[i]:
            m = plan.phase_multiple(i)
            axes += b.tmpl("window_phase_axis", p=name(nm.p[i]), q=name(nm.q[i]), i=literal(i), m=literal(m))
    if plan.phase_planes:  # CONV.flat-phases: one stride phase's plane, PH x PW; rows of whole 32-byte blocks
        align = plan.limits.align_elements
        reach = [f"{nm.o[i]} + DILATION[{i}] * (KERNEL[{i}] - 1) // STRIDE[{i}]" for i in range(plan.nd)]
        axes += [cst.parse_statement(f"{nm.p[0]} = {reach[0]}\n"),
                 cst.parse_statement(f"{nm.p[-1]} = ceil_div({reach[-1]}, {align}) * {align}\n"),
                 cst.parse_statement(f"{nm.q[-1]} = ceil_div(max({nm.q[-1]}, STRIDE[1] * {nm.p[-1]}), {align})"
                                     f" * {align}\n"),
                 cst.parse_statement(f"{nm.hi[-1]} = {nm.q[-1]} - {nm.lo[-1]} - {nm.sizes[-1]}\n")]
    if plan.band_matmul:
        align = plan.band_align
        axes += [cst.parse_statement(f"OWP = ceil_div({nm.o[-1]}, {align}) * {align}\n")]
    returns = cst.Tuple([cst.Element(name(v)) for v in nm.geometry])
    from pypto_tui.codegen.model_new import docstring

    doc = docstring(f"Sizes of {_op_name(s)} for these input dims (CONV.im2col, CONV.row-blocks): "
                    f"({', '.join(nm.geometry)}).", "    ")
    params = cst.Parameters(params=[cst.Param(name(d)) for d in dim_names(plan.nd)])
    block_rows = literal(1) if plan.depth_slices else expr(f"ceil_div({nm.o[0]}, LOOP_COUNT)")
    return b.tmpl("window_geometry", name=name(fn), params=params, doc=[doc], axes=axes, rows=name(nm.o[0]),
                  block_rows=block_rows, returns=returns)


# ------------------------------------------------------------------------------------ ModelNew's modules
@cites("CONV.weights-from-module")
def _model_modules(b: Builder, spec: Any) -> None:
    """ModelNew.__init__ repeats the task's module constructors, in order (CONV.weights-from-module):
    under the same seed they draw the same weights. A constructor that reads names other than
    __init__'s parameters is rebuilt from the contract's values instead."""
    task = b.ctx.task
    params = set(task.param_names)
    attrs = dict(b.ctx.contract.attributes)
    for attr, kind, args, names in task.modules:
        if set(names) <= params | MODULE_GLOBALS:
            call = expr(f"nn.{kind}({args})")
        else:
            from pypto_tui.contract.signatures import MODULE_SIGS

            given = dict(attrs.get(attr) or {})
            values = {k: given[k] for k, _ in MODULE_SIGS.get(kind, ()) if k in given and k not in ("device", "dtype")}
            if not values:
                raise Unsupported(f"self.{attr} = nn.{kind}(...) reads names ModelNew cannot see "
                                  f"({', '.join(sorted(set(names) - params - MODULE_GLOBALS))})")
            call = expr(f"nn.{kind}(" + ", ".join(f"{k}={_py(v)}" for k, v in values.items()) + ")")
        b.forward.init += b.fwd("self.{a} = {call}", a=name(attr), call=call)
    if spec.is_conv and not any(a == spec.weight_attr for a, *_ in task.modules):
        raise Unsupported(f"self.{spec.weight_attr} is not built by a plain `self.{spec.weight_attr} = "
                          "nn.Conv...(...)` in Model.__init__: ModelNew could not build the same weights")


def _py(v: Any) -> str:
    if isinstance(v, list):
        return repr(tuple(v))
    return repr(v)


def _needs(c: Contract, dims: DimPlan, g: Geometry, kb: KnowledgeBase) -> Needs:
    return window_needs(c, dims, g, kb)


PATTERNS = (
    Pattern("window", ("conv", "pool"), build_window, (*RULES, *POOL_RULES[:7]), needs=_needs),
)
