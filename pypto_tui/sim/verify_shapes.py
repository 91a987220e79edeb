"""The shapes a verification runs at, and the design they must keep.

Reads the design pipeline for what the full-size kernel uses (its tile, loop, cube tiles: the
generated module's own constants) and searches smaller input shapes that keep it; verification.py
builds and judges the test, sim/module_test.py does the same search for a chain's size constants.
Both import this module; it imports neither (the two used to import each other).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pypto_tui.design import Pipeline
from pypto_tui.errors import InputError
from pypto_tui.ops.roles import traits
from pypto_tui.sim import scaled
from pypto_tui.sim.design_runs import variant

if TYPE_CHECKING:
    from pypto_tui.ops.base import OpKind
    from pypto_tui.window import WindowPlan


# ------------------------------------------------------------------------------ the design
# Everything that reads the design pipeline for verification is in this section.
def full_shapes(pipeline: Pipeline) -> scaled.Shapes:
    return {i.name: tuple(i.shape) for i in pipeline.contract().tensor_inputs if i.shape is not None}


def with_shapes(pipeline: Pipeline, shapes: scaled.Shapes, **changes: Any) -> Pipeline:
    edits = dict(pipeline.design.contract_edits)
    for name, s in shapes.items():
        edits[f"inputs.{name}.shape"] = list(s)
    return variant(pipeline, contract_edits=edits, **changes)


def geometry_at(pipeline: Pipeline, shapes: scaled.Shapes) -> Any:
    """The kernel geometry at other input shapes (None when the design has none there). Built
    from the pure steps directly: the shape search asks this hundreds of times."""
    from pypto_tui.contract.edits import apply_edits
    from pypto_tui.dims import plan_dims
    from pypto_tui.plan import geometry_of

    try:
        c = apply_edits(pipeline.contract(), {f"inputs.{n}.shape": list(s) for n, s in shapes.items()})
        return geometry_of(c, plan_dims(c, pipeline.kb, pipeline.design.strategy))
    except (InputError, ValueError):
        return None


def generated_kernel(pipeline: Pipeline) -> Any:
    from pypto_tui.design import kernel_of

    return kernel_of(pipeline)


def _keep_values(pipeline: Pipeline) -> tuple[set[int], int | None]:
    from pypto_tui.contract.selfcheck import _keep_values

    c = pipeline.contract()
    return _keep_values(c), c.op_args.get("num_groups") or c.attributes.get("num_groups")


def _window_floors(pipeline: Pipeline) -> dict[int, int]:
    """A conv's or pool's spatial sizes keep room for two output positions (contract/conv.py), and a
    pool's channels hold its test planes over the test's images (WindowPlan.test_planes)."""
    from pypto_tui.contract.conv import min_sizes

    floors = min_sizes(pipeline.contract())
    plan = window_plan_of(pipeline)
    planes = plan.test_planes if plan is not None else None
    if plan is not None and planes is not None:
        channels = plan.spec.in_channels
        floors[channels] = max(floors.get(channels, 0), min(channels, math.ceil(planes / WINDOW_TEST_BATCH)))
    return floors


def window_plan_of(pipeline: Pipeline) -> WindowPlan | None:
    """The conv's or pool's window plan the dimension step made (None for every other family, or
    when the design cannot be planned)."""
    try:
        return getattr(pipeline.dims(), "window", None)
    except InputError:
        return None


def kernel_constants(gen: Any) -> dict[str, Any]:
    return {n: (v.get("value") if isinstance(v, dict) else v) for n, v in (gen.constants or {}).items()}


def tile_constant_name(consts: dict[str, Any], tile: Sequence[int] | None) -> str | None:
    """The constant that carries the design's vec tile (TILE_SHAPE, PHASE1_TILE_SHAPE, ...)."""
    if tile is None:
        return None
    for name, value in consts.items():
        if isinstance(value, list | tuple) and list(value) == list(tile):
            return name
    return "TILE_SHAPE" if "TILE_SHAPE" in consts else None


def design_to_keep(pipeline: Pipeline, gen: Any | None = None) -> scaled.DesignToKeep | None:
    """What the full-size kernel uses, read from the generated module's own constants."""
    try:
        g = pipeline.geometry()
        gen = gen if gen is not None else generated_kernel(pipeline)
    except InputError:
        return None
    if not gen.supported:
        return None
    consts = kernel_constants(gen)
    tile_name = tile_constant_name(consts, pipeline.chosen_tile())
    tile = tuple(consts[tile_name]) if tile_name else None
    loop = consts.get("LOOP_COUNT")
    axis = ((gen.constants.get("LOOP_COUNT") or {}).get("numbers") or {}).get("axis", 0) if loop else 0
    cube = tuple(max(consts[c]) for c in ("CUBE_M", "CUBE_K", "CUBE_N")) if all(
        c in consts for c in ("CUBE_M", "CUBE_K", "CUBE_N")) else None
    reduce_axis = g.reduce_dim if g.reduce_dim is not None else (0 if len(g.shape) == 1 and g.why == "reduce" else None)
    roles = pipeline.needs().tiles
    role = tuple(roles[0].shape) if roles else tuple(g.shape)
    own = role if role != tuple(g.shape) else None
    fits = tile is not None and len(tile) == len(own if own else g.shape)
    return scaled.DesignToKeep(tuple(g.shape), tile if fits else None,
                               int(loop) if loop else None, int(axis), g.matmul, cube,
                               reduce_axis, own, _block_axes(pipeline))


def _block_axes(pipeline: Pipeline) -> tuple[int, ...]:
    """A pool's block of planes (POOL.plane-blocks) leads its window tensor: the test keeps the
    block the design chose, where a shrink to fewer planes would test a smaller block."""
    plan = window_plan_of(pipeline)
    return (0,) if plan is not None and plan.test_planes is not None else ()


# ------------------------------------------------------------------------------ test shapes
def reduced_shapes(pipeline: Pipeline, budget: int = scaled.VERIFY_ELEMENTS,
                   keep: scaled.DesignToKeep | None = None) -> scaled.Shapes:
    """Smaller input shapes of the same rank; with `keep`, only as small as the design allows."""
    keep_values, groups = _keep_values(pipeline)

    def accept(shapes: scaled.Shapes) -> bool:
        g = geometry_at(pipeline, shapes)
        if g is None or keep is None:
            return g is not None
        return not scaled.kept_problems(keep, g.shape, g.matmul, tile_tensor_at(pipeline, keep, shapes))

    def lays_out(shapes: scaled.Shapes) -> bool:
        return graph_lays_out(pipeline, shapes) and (keep is None or accept(shapes))

    graph = has_views(pipeline)
    keep_values, positions = _channels_by_position(pipeline, keep_values)
    positions |= _offset_axes(pipeline)
    start = _window_batch(pipeline, full_shapes(pipeline))
    if keep is not None and start != full_shapes(pipeline) and not accept(start):
        start = full_shapes(pipeline)  # the design's loop runs over the images: shrink them only as far as it allows
    return scaled.reduce_shapes(start, keep_values=keep_values, groups=groups, budget=budget,
                                accept=lays_out if graph else accept if keep is not None else None,
                                min_sizes=_window_floors(pipeline), measure=measure_elements(pipeline),
                                keep_positions=positions, by_position=_elementwise_operands(pipeline),
                                ties=_size_ties(pipeline), fixed=_whole_axes(pipeline))


def has_views(pipeline: Pipeline) -> bool:
    """The contract's graph holds a view: the only nodes whose constants (a narrow's offset, a reshape's
    sizes) a test shape can contradict, so the only graphs `graph_lays_out` need check (a shape search asks
    it of every candidate)."""
    graph = pipeline.contract().graph
    return graph is not None and any(n.get("op") == "view" for n in graph.get("nodes", ()))


def graph_lays_out(pipeline: Pipeline, shapes: scaled.Shapes) -> bool:
    """A module's graph still holds together at these shapes: a view at constant offsets (a traced
    `split(n_embd, dim=2)`, a narrow at 768 of 2304) pins the axis it cuts, which a smaller test axis would
    put outside the tensor."""
    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.plan import decompose

    try:
        graph = with_shapes(pipeline, shapes).contract().graph
        if graph is not None:
            decompose(OpGraph.from_data(graph))
    except (InputError, ValueError):  # an OpError is a ValueError: the graph does not hold at these shapes
        return False
    return True


def _kind(pipeline: Pipeline) -> OpKind | None:
    """The registry kind of the contract's operator (None for a contract of no one kind)."""
    from pypto_tui.ops import registry

    op = pipeline.contract().op
    return registry.kind(op) if op else None


def _offset_axes(pipeline: Pipeline) -> set[tuple[str, int]]:
    """The axis a slice cuts at constant positions keeps its size: a traced `out[:, -1, :]` is a narrow at
    start T - 1 of T steps, and a traced `split(768, dim=2)` of a 2304-wide value three narrows of length
    768, which a shorter test axis would put outside the tensor."""
    c = pipeline.contract()
    kind = _kind(pipeline)
    x = c.operands[0] if c.operands else None
    start, dim = c.op_args.get("start"), c.op_args.get("dim")
    if kind is None or "start" not in kind.params or x is None or not x.shape or not isinstance(dim, int):
        return set()
    return {(x.name, dim % len(x.shape))} if isinstance(start, int) else set()


def _operand_axis(pipeline: Pipeline, operand: int, axis: int) -> tuple[str, int] | None:
    """(input name, axis) of the contract's operand `operand` (a negative axis counts from its end), or
    None when the contract has no such operand or axis."""
    ops = pipeline.contract().operands
    if not 0 <= operand < len(ops) or not -len(ops[operand].shape or ()) <= axis < len(ops[operand].shape or ()):
        return None
    return ops[operand].name, axis % len(ops[operand].shape or ())


def _whole_axes(pipeline: Pipeline) -> set[tuple[str, int]]:
    """The registry kind's axes the kernel holds whole (OpKind.whole_axes), by input name."""
    kind = _kind(pipeline)
    found = (_operand_axis(pipeline, o, a) for o, a in (kind.whole_axes if kind else ()))
    return {p for p in found if p is not None}


def _size_ties(pipeline: Pipeline) -> list[tuple[tuple[str, int], tuple[str, int], int]]:
    """The registry kind's tied axes (OpKind.size_ties) on the contract's operands, by input name."""
    kind = _kind(pipeline)
    out = []
    for (a, i), (b, j), k in (kind.size_ties if kind else ()):
        first, second = _operand_axis(pipeline, a, i), _operand_axis(pipeline, b, j)
        if first is not None and second is not None:
            out.append((first, second, k))
    return out


def _elementwise_operands(pipeline: Pipeline) -> bool:
    """Operands of one shape meet element by element (no matmul pairs one's rows with another's
    columns), so their axes shrink by position."""
    try:
        return pipeline.geometry().matmul is None and not traits(pipeline.contract().family).cube
    except InputError:
        return False


def tile_tensor_at(pipeline: Pipeline, keep: scaled.DesignToKeep, shapes: scaled.Shapes) -> tuple[int, ...] | None:
    """The tile's own tensor at other input shapes, when it is not the geometry (None otherwise)."""
    if keep.tile_shape is None:
        return None
    try:
        return tuple(with_shapes(pipeline, shapes).needs().tiles[0].shape)
    except (InputError, ValueError, IndexError):
        return None


def _window_input(pipeline: Pipeline) -> Any | None:
    """The input a conv or pool runs its windows over (None for every other family)."""
    c = pipeline.contract()
    if not traits(c.family).window or not c.operands:
        return None
    return c.operands[0]


def _channels_by_position(pipeline: Pipeline, keep_values: set[int]) -> tuple[set[int], set[tuple[str, int]]]:
    """A conv keeps its input channels (its module is built for them) by position, not by value: a
    depth or width equal to the channel count still shrinks (KernelBench 73: depth 32, channels 32).
    So does a norm built for its channels (KernelBench 33: batch 64 = channels 64 held the test
    input at 67M elements to keep the design); a size its normalized shape names stays kept by value."""
    c = pipeline.contract()
    if traits(c.family).sizes_in_init:
        from pypto_tui.contract.selfcheck import norm_bound_to_channels, normalized_sizes

        x = c.operands[0] if c.operands else None
        if x is None or not norm_bound_to_channels(c) or not x.shape or len(x.shape) < 3:
            return keep_values, set()
        channels = x.shape[1]
        return (keep_values if channels in normalized_sizes(c) else keep_values - {channels}), {(x.name, 1)}
    x = _window_input(pipeline)
    if x is None or not traits(c.family).channels_fixed or not x.shape or len(x.shape) < 3:
        return keep_values, set()
    from pypto_tui.contract.conv import kept_sizes

    return keep_values - kept_sizes(c), {(x.name, 1)}


def measure_elements(pipeline: Pipeline) -> Callable[[scaled.Shapes], int]:
    """The size a test's budget bounds: the largest input, or for a conv or pool the largest tensor
    its kernels touch (the prepared input, zero-inserted for a transposed conv, and the output).
    KernelBench 81 (transposed, stride 5) ran out of 8 GiB in 16 s at an input of 0.5 M elements:
    its zero-inserted input was 13 M."""
    x = _window_input(pipeline)
    if x is None:
        return scaled.largest_input
    from pypto_tui.contract.conv import WindowError, window_spec
    from pypto_tui.window import plan_window

    c = pipeline.contract()

    def measure(shapes: scaled.Shapes) -> int:
        size = scaled.largest_input(shapes)
        if x.name not in shapes:
            return size
        try:
            spec = window_spec(c, replace(x, shape=tuple(shapes[x.name])))
            plan = plan_window(spec, limits=pipeline.kb.limits.window)
        except (WindowError, ValueError):
            return size
        prepared = spec.batch * spec.in_channels * math.prod(a.prepared for a in plan.axes)
        return max(size, prepared, math.prod(spec.output_shape))

    return measure


WINDOW_TEST_BATCH = 2  # images in a conv's or pool's test: two show the per-image offsets are right


def _window_batch(pipeline: Pipeline, shapes: scaled.Shapes) -> scaled.Shapes:
    """A conv or pool at test shapes runs WINDOW_TEST_BATCH images. Its loop runs images x blocks
    of rows, and pass-verify's cost grows with iterations x tensor size, so every further image
    only multiplies the time (KernelBench 64 at 16 images: over the 8 GiB cap); the batch is no
    part of the tile or loop design, and a batch equal to the channel count would otherwise be
    kept with the channels."""
    x = _window_input(pipeline)
    if x is None or x.name not in shapes or not shapes[x.name] or shapes[x.name][0] <= WINDOW_TEST_BATCH:
        return shapes
    return {**shapes, x.name: (WINDOW_TEST_BATCH, *shapes[x.name][1:])}


def _relaxations(keep: scaled.DesignToKeep) -> list[scaled.DesignToKeep | None]:
    """What is kept, in order of preference, when keeping everything needs shapes over the limit:
    all of it, then the cube tiles without the loop (a matmul's tiles are its design; its loop only
    splits M), then the tile alone, then nothing."""
    out: list[scaled.DesignToKeep | None] = [keep]
    if keep.cube and keep.loop_count:
        out.append(replace(keep, loop_count=None))
    if (keep.loop_count or keep.cube) and keep.tile:
        out.append(replace(keep, loop_count=None, cube=None))
    out.append(None)
    return out


def small_shapes(pipeline: Pipeline, keep: scaled.DesignToKeep | None
                 ) -> tuple[scaled.Shapes, scaled.DesignToKeep | None, list[str]]:
    """The test shapes, what of the design they keep, and, when that is not all of it, why."""
    if keep is None:
        return reduced_shapes(pipeline), None, []
    first_size = 0
    measure = measure_elements(pipeline)
    for option in _relaxations(keep):
        shapes = reduced_shapes(pipeline, keep=option)
        size = measure(shapes)
        first_size = first_size or size
        if size <= keep.element_limit or option is None:
            notes = [] if option is keep else [
                f"keeping {keep.describe()} needs an input of {first_size} elements, over the verify limit of "
                f"{keep.element_limit}, so the test shapes keep "
                f"{option.describe() if option else 'none of it'}; `--scale full` verifies the design as chosen"]
            return shapes, option, notes
    raise AssertionError("unreachable: the last option keeps nothing")


def tiled_shapes(pipeline: Pipeline, shapes: scaled.Shapes, full: tuple[int, ...], test: tuple[int, ...],
                 base: Pipeline | None = None) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The shape the main tile tiles, at full and at test size: the kernel geometry, or the
    pattern's own tensor when its main tile is not the geometry's (a conv's column buffer).
    `base` is the task `shapes` apply to when it is not `pipeline` (the task at smaller sizes)."""
    role = pipeline.needs().tiles[0]
    if tuple(role.shape) == tuple(full):
        return full, test
    return tuple(role.shape), tuple(with_shapes(base or pipeline, shapes).needs().tiles[0].shape)


def aligned_last(pipeline: Pipeline, tile: tuple[int, ...]) -> tuple[int, ...]:
    """A clamped tile's last dim rounded up to 32 bytes: it covers its whole axis, and a pattern's own
    tensor may feed a concat, where 0.2.0 refuses an unaligned tile (HW.concat-reduce-align)."""
    from pypto_tui.tiles import align_unit

    unit = align_unit(pipeline.kb, pipeline.needs().tiles[0].dtype)
    return (*tile[:-1], -(-tile[-1] // unit) * unit)


def tile_fits(tile: Sequence[int], full: Sequence[int], test: Sequence[int]) -> bool:
    return len(tile) == len(test) and all(t <= s or t > f for t, f, s in zip(tile, full, test, strict=True))


def fmt_value(v: Any) -> str:
    if v is None:
        return "none"
    return str(tuple(v)) if isinstance(v, list | tuple) else str(v)


# ------------------------------------------------------------------------------ tile counts
def spread_shapes(pipeline: Pipeline, keep: scaled.DesignToKeep | None, shapes: scaled.Shapes,
                  avoid: Mapping[str, int] | None = None, shrunk: scaled.Shapes | None = None
                  ) -> tuple[scaled.Shapes, scaled.Spread]:
    """The test shapes with every counted axis of `keep` (a tiled reduction or scan axis, a matmul's
    K) at an odd tile count of at least three (scaled.spread; `avoid`: each axis's count in the first
    trial, for the second), each change made to one size class of the
    inputs (a norm's channels and the sizes its module is built for stay). Why: the shrink stops at
    two tiles, the one count (and width) a kernel hard-coding it would pass at. `shrunk`: the shapes
    the shrink chose, whose size bounds the growth (default `shapes`; a second trial passes the first's
    shrink so growth does not compound)."""
    if keep is None:
        return shapes, scaled.Spread({}, (), [], None)
    # The classes of the task's own shapes: sizes the shrink happened to make equal (a matmul's M, K and
    # N all at 256) stay apart, as the shrink kept them.
    by_position = _elementwise_operands(pipeline)
    cls = scaled.size_classes(full_shapes(pipeline), by_position)
    if set(cls) != {(n, ax) for n, s in shapes.items() for ax in range(len(s))} or any(
            shapes[n][ax] != shapes[m][bx] for (n, ax), c in cls.items() for (m, bx), d in cls.items() if c == d):
        cls = scaled.size_classes(shapes, by_position)
    values: dict[Any, int] = {c: shapes[n][ax] for (n, ax), c in cls.items()}
    keep_values, _ = _keep_values(pipeline)
    keep_values, positions = _channels_by_position(pipeline, keep_values)
    positions |= _offset_axes(pipeline)
    frozen = {cls[p] for p in positions if p in cls}
    knobs = [c for c in values if c not in frozen and values[c] not in keep_values]
    measure = measure_elements(pipeline)
    start = measure(shrunk if shrunk is not None else shapes)
    # the shrink's floors hold here too (a pool's planes: more than two blocks)
    full = full_shapes(pipeline)
    floors = _window_floors(pipeline)
    floor_of = {c: floors[full[n][ax]] for (n, ax), c in cls.items()
                if n in full and ax < len(full[n]) and full[n][ax] in floors}

    def apply(v: dict[Any, int]) -> scaled.Shapes:
        return {n: tuple(v[cls[(n, ax)]] for ax in range(len(s))) for n, s in shapes.items()}

    graph = has_views(pipeline)

    def probe(v: dict[Any, int]) -> scaled.Probe | None:
        s = apply(v)
        g = geometry_at(pipeline, s)
        if g is None or (graph and not graph_lays_out(pipeline, s)):
            return None
        own = tile_tensor_at(pipeline, keep, s)
        size = measure(s)
        kept = (all(v[c] >= floor_of[c] for c in floor_of if c in v)
                and not scaled.kept_problems(keep, g.shape, g.matmul, own)
                and size <= max(keep.element_limit, start) * (
                    scaled.SPREAD_GROWTH if shrunk is None else scaled.SECOND_GROWTH))
        return scaled.Probe(tuple(scaled.counted_axes(keep, g.shape, g.matmul, own)), kept, size,
                            loop_iterations(keep, g.shape))

    found = scaled.spread(values, knobs, probe, avoid)
    return apply(found.values), found


def loop_iterations(keep: scaled.DesignToKeep | None, shape: Sequence[int]) -> int:
    """The iterations the test's loop runs at geometry `shape` (1 without a loop)."""
    if keep is None or not keep.loop_count or not 0 <= keep.loop_axis < len(shape):
        return 1
    count = scaled.loop_count_at(keep, shape) or 1
    return scaled.loop_shape(shape[keep.loop_axis], count)[1] if count > 1 else 1
