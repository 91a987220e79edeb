"""Smaller shapes for verification that keep the chosen design where it can go wrong.

The interpreter's memory and time grow with the tensor size times the loop iterations, so a
design is verified at reduced shapes. Shrinking blindly removes what is under test: a reduction
axis shrunk to one tile never exercises the accumulation across tiles, a loop cut to one
iteration never exercises the offsets of the next, a matmul whose K is one cube tile never adds
two partial products. So shapes shrink only while the design keeps (`kept_problems`):

- the tile: every tiled axis at least one tile, a whole number of tiles when it was one;
- at least two tiles along a tiled reduction or scan axis (when the full shape had two);
- the loop: at least two iterations when the design has two or more, its tail (or lack of one),
  and each iteration at least one tile along the loop axis (a whole number when it was);
- a matmul: each of M (per loop iteration), K and N at least one L1 cube tile, a whole number
  when it was, and K at least two cube tiles when it had two (the split-K accumulation).
The loop count itself may change (64 iterations become 2 at a smaller loop axis: `loop_count_at`
picks the largest count that keeps the above); the caller lists every constant that changes.
Everything else shrinks, the axes no tile or loop depends on first. Pure: shapes in, shapes out;
the caller supplies the geometry.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass
from typing import Any

from pypto_tui.shapes import ceil_div

VERIFY_ELEMENTS = 1 << 16  # shrink until the largest input is this small, if the design allows
MAX_VERIFY_ELEMENTS = 1 << 20  # past this, keeping the design costs too much: something must give
MAX_VECTOR_VERIFY_ELEMENTS = 3 << 19
"""The limit for a design with no cube stage (1.5M elements), measured on KernelBench level 1 with the
worker's 8 GB address-space cap: an RMSNorm kept at 1.57M elements verified in 98 s, while an
InstanceNorm at 3.1M and a BatchNorm at 2.1M ran the interpreter out of memory (326 s, 375 s); a
transposed conv at 1.1M (a cube stage) did not finish in 1200 s."""
MIN_LAST = 32
MAX_TEST_ITERATIONS = 16
"""The most loop iterations a test runs. Pass-verify's memory grows with iterations x tensor size
(measured, an ELU at 1M elements: 16 iterations 1.2 GB, 64 iterations at 4M 6.2 GB; a pool with one
output row per iteration ran out of memory), so a test keeps at least two iterations and the tail,
but no more than this many."""
MAX_TEST_WORK = 1 << 25
"""The bound on (largest tensor's elements) x (loop iterations) for the tile counts chosen after the
shrink (`spread`): 32M element-iterations, about 2.4 GB at the 75 bytes per element-iteration
measured for a 1M-element loop of 16 iterations."""

Shapes = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class DesignToKeep:
    """The parts of the full-size design that must mean the same at the test shapes."""

    shape: tuple[int, ...]                        # the kernel geometry at full size
    tile: tuple[int, ...] | None = None           # the vec tile the kernel sets (None: none)
    loop_count: int | None = None                 # one pypto.loop (None: no loop)
    loop_axis: int = 0                            # the axis it runs along
    matmul: tuple[int, int, int] | None = None    # (M, K, N) at full size
    cube: tuple[int, int, int] | None = None      # the L1 cube tiles along M, K, N
    reduce_axis: int | None = None                # the axis a reduction or scan runs along
    tile_shape: tuple[int, ...] | None = None     # the tile's own tensor at full size, when it is not
                                                  # the geometry (a conv's columns, a matvec's rows)
    exact_axes: tuple[int, ...] = ()              # axes of that tensor (or the geometry) whose size is a
                                                  # block of the design (a pool's planes per item)

    def describe(self) -> str:
        bits = []
        if self.tile:
            bits.append(f"tile {tuple(self.tile)}")
        if self.cube:
            bits.append(f"cube tiles (m, k, n) L1 {self.cube}")
        if self.loop_count:
            bits.append(f"loop of {loop_shape(self.shape[self.loop_axis], self.loop_count)[1]} iteration(s)"
                        if 0 <= self.loop_axis < len(self.shape) else f"loop count {self.loop_count}")
        return " and ".join(bits) or "the design"

    @property
    def element_limit(self) -> int:
        """How large an input the test shapes may have to keep this design."""
        return MAX_VERIFY_ELEMENTS if self.cube or self.matmul else MAX_VECTOR_VERIFY_ELEMENTS


def whole_tiles(full: int, new: int, step: int, what: str) -> str | None:
    """`new` keeps what `full` had with respect to `step`: at least one, a whole number if it was."""
    if step <= 1 or full < step:
        return None
    if new < step:
        return f"{what} {new} is less than one tile of {step}"
    if full % step == 0 and new % step:
        return f"{what} {new} is not a whole number of tiles of {step}"
    return None


def two_tiles(full: int, new: int, step: int, what: str) -> str | None:
    """`new` keeps two tiles of `step` when `full` had two: the accumulation across tiles is tested."""
    if step <= 1 or full < 2 * step or new >= 2 * step:
        return None
    return f"{what} {new} is less than two tiles of {step} (the accumulation across tiles would go untested)"


def loop_shape(total: int, count: int) -> tuple[int, int, bool]:
    """BASIC_BATCH, iterations and whether there is a tail, as the generated loop computes them."""
    batch = ceil_div(total, count)
    return batch, ceil_div(total, batch), total % batch != 0


def _loop_problems(keep: DesignToKeep, shape: tuple[int, ...], count: int) -> list[str]:
    ax = keep.loop_axis
    full_batch, full_iters, full_tail = loop_shape(keep.shape[ax], keep.loop_count or 1)
    batch, iters, tail = loop_shape(shape[ax], count)
    problems = []
    if full_iters >= 2 and iters < 2:
        problems.append(f"the loop would run {iters} iteration(s) instead of at least 2 (the design runs {full_iters})")
    if tail != full_tail:
        problems.append("the loop's tail would " + ("appear" if tail else "disappear"))
    step = (keep.cube[0] if keep.cube else 1) if keep.matmul else (keep.tile[ax] if keep.tile else 1)
    p = whole_tiles(full_batch, batch, step, "each loop iteration's")
    if p:
        problems.append(p)
    return problems


def loop_count_at(keep: DesignToKeep, shape: Sequence[int], fewest: bool = False) -> int | None:
    """The loop count to run at test geometry `shape`: the design's own when it keeps the loop,
    else the largest smaller count that does (None when no count does, or there is no loop).
    `fewest`: the smallest count that does instead (the cheapest test of a design not kept).
    Never more than MAX_TEST_ITERATIONS: pass-verify keeps copies per iteration, so iterations
    cost memory as elements do (a pool with one output row per iteration ran out of it)."""
    count = keep.loop_count or 0
    if count <= 1 or not 0 <= keep.loop_axis < len(shape):
        return None
    shape = tuple(shape)
    counts = range(min(count, shape[keep.loop_axis], MAX_TEST_ITERATIONS), 1, -1)
    for c in (reversed(counts) if fewest else counts):
        if not _loop_problems(keep, shape, c):
            return c
    return None


def kept_problems(keep: DesignToKeep, shape: Sequence[int], matmul: tuple[int, int, int] | None = None,
                  tile_shape: Sequence[int] | None = None) -> list[str]:
    """Why the design would not be kept at test geometry `shape` (empty: it is), with the loop
    count `loop_count_at` picks. `tile_shape` is the tile's own tensor at the test shapes, when
    `keep.tile_shape` says it is not the geometry."""
    shape = tuple(shape)
    if len(shape) != len(keep.shape):
        return [f"the kernel's rank changes from {len(keep.shape)} to {len(shape)}"]
    problems: list[str] = []
    count = keep.loop_count or 0
    looped = count > 1 and 0 <= keep.loop_axis < len(shape)
    own = keep.tile_shape is not None and tile_shape is not None and len(tile_shape) == len(keep.tile_shape)
    tiled_full, tiled_new = (tuple(keep.tile_shape), tuple(tile_shape)) if own else (keep.shape, shape)  # type: ignore[arg-type]
    if keep.tile and len(keep.tile) == len(tiled_new) == len(tiled_full):
        for axis, (full, new, t) in enumerate(zip(tiled_full, tiled_new, keep.tile, strict=True)):
            p = whole_tiles(full, new, t, f"axis {axis}")
            if p and not (looped and axis == keep.loop_axis and not own):
                problems.append(p)
            if axis == keep.reduce_axis and not own:
                p = two_tiles(full, new, t, f"reduction axis {axis}")
                if p:
                    problems.append(p)
    for axis in keep.exact_axes:
        if axis < len(tiled_new) and tiled_new[axis] != tiled_full[axis]:
            problems.append(f"axis {axis} is a block of {tiled_full[axis]} in the design, {tiled_new[axis]} here")
    test_count = count
    if looped:
        found = loop_count_at(keep, shape)
        if found is None:
            problems.append("no loop count keeps at least 2 iterations, the tail (or none) and whole tiles per "
                            f"iteration at a loop axis of {shape[keep.loop_axis]}")
        else:
            test_count = found
    if keep.matmul and keep.cube and matmul:
        m_full, m_new = keep.matmul[0], matmul[0]
        if looped:
            m_full, m_new = ceil_div(m_full, count), ceil_div(m_new, max(test_count, 1))
        for what, full, new, t in zip(("M", "K", "N"), (m_full, *keep.matmul[1:]), (m_new, *matmul[1:]), keep.cube,
                                      strict=True):
            p = whole_tiles(full, new, t, what)
            if p:
                problems.append(p)
        p = two_tiles(keep.matmul[1], matmul[1], keep.cube[1], "K")
        if p:
            problems.append(p)
    return problems


def size_classes(shapes: Mapping[str, Sequence[int]], by_position: bool = False,
                 apart: Set[tuple[str, int]] = frozenset()) -> dict[tuple[str, int], int]:
    """Which axes must keep the same size: axes of equal size in *different* inputs (a matmul's K,
    two operands of the same shape) share a class; equal sizes within one input do not (an
    image's H and W may shrink apart). With `by_position`, two inputs of the same shape pair up axis by
axis only (a square x and its mask keep rows and columns apart; a matmul's square operands must
not: its K is A's columns and B's rows). Returns (input, axis) -> class id."""
    positions = [(n, ax) for n, s in shapes.items() for ax in range(len(s))]
    parent = {p: p for p in positions}

    def root(p: tuple[str, int]) -> tuple[str, int]:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for i, (n1, a1) in enumerate(positions):
        for n2, a2 in positions[i + 1:]:
            if n1 == n2 or shapes[n1][a1] != shapes[n2][a2] or ((n1, a1) in apart) != ((n2, a2) in apart):
                continue  # a fixed axis (`apart`) shares its class only with other fixed axes
            if by_position and tuple(shapes[n1]) == tuple(shapes[n2]) and a1 != a2:
                continue  # two inputs of one shape (x and its mask) pair axis by axis, not rows with columns
            parent[root((n2, a2))] = root((n1, a1))
    ids: dict[tuple[str, int], int] = {}
    return {p: ids.setdefault(root(p), len(ids)) for p in positions}


def reduce_shapes(shapes: Mapping[str, Sequence[int]], *, keep_values: set[int], groups: int | None = None,
                  budget: int = VERIFY_ELEMENTS, accept: Callable[[Shapes], bool] | None = None,
                  min_sizes: Mapping[int, int] | None = None,
                  measure: Callable[[Shapes], int] | None = None,
                  keep_positions: Set[tuple[str, int]] = frozenset(), by_position: bool = False,
                  ties: Sequence[tuple[tuple[str, int], tuple[str, int], int]] = (),
                  fixed: Set[tuple[str, int]] = frozenset()) -> Shapes:
    """Halve the largest free size class (see size_classes) until the biggest input has at most
    `budget` elements or nothing more can shrink with `accept` still true.

    Distinct sizes stay distinct (M != K keeps a transposed operand detectable) as long as that
    reaches the budget; only then may two sizes meet. Odd sizes stay odd (see _smaller). Sizes in
    `keep_values` (norm channels, normalized shapes) are never changed; a last axis stays >= 32
    elements so 32-byte aligned tiles and 1 KB moves still make sense; a channel axis (axis 1)
    divisible by the group count stays so; a size in `min_sizes` (a conv's spatial axis, which needs
    room for its window) stays at least that large. `measure` is the size the budget bounds (default:
    the largest input; a transposed conv's zero-inserted input can be stride^nd times larger).
    `keep_positions`: (input, axis) pairs never changed, whatever other axis has their size (a conv's
    channels, while a depth equal to them shrinks). `ties`: ((input, axis), (input, axis), k), the first
    axis k times the second wherever the second shrinks (an LSTM's 4H gate rows and its hidden size H).
    `fixed`: (input, axis) pairs that keep their size and share a class only with each other, so another
    axis that happens to have the same size still shrinks (a layer's 512 features and its 512 time steps).
    """
    base = {n: tuple(int(d) for d in s) for n, s in shapes.items()}
    cls = size_classes(base, by_position, frozenset(fixed))
    original = {c: base[n][ax] for (n, ax), c in cls.items()}
    floors = dict.fromkeys(original, 2)
    grouped: set[int] = set()
    for (n, ax), c in cls.items():
        if ax == len(base[n]) - 1:
            floors[c] = MIN_LAST
        floors[c] = max(floors[c], (min_sizes or {}).get(original[c], 0))
        if ax == 1 and len(base[n]) > 2 and groups and groups > 1 and original[c] % groups == 0:
            grouped.add(c)
    size = dict(original)
    frozen = {cls[p] for p in (*keep_positions, *fixed) if p in cls}
    derived = {cls[a]: (cls[b], k) for a, b, k in ties
               if a in cls and b in cls and cls[a] != cls[b] and original[cls[a]] == k * original[cls[b]]}
    frozen |= set(derived)  # a tied class moves only with the class it follows

    def apply(sizes: Mapping[int, int]) -> Shapes:
        if derived:
            sizes = {**sizes, **{c: k * sizes[b] for c, (b, k) in derived.items()}}
        return {n: tuple(sizes[cls[(n, ax)]] for ax in range(len(s))) for n, s in base.items()}

    def largest(sizes: Mapping[int, int]) -> int:
        return (measure or largest_input)(apply(sizes))

    for distinct in (True, False):
        size = _shrink(size, original, floors, grouped, int(groups or 1), keep_values, frozen, budget, distinct,
                       lambda s: largest(s), None if accept is None else lambda s: accept(apply(s)))
    return apply(size)


def _shrink(size: dict[int, int], original: Mapping[int, int], floors: Mapping[int, int], grouped: set[int],
            groups: int, keep_values: set[int], frozen: Set[int], budget: int, distinct: bool,
            largest: Callable[[dict[int, int]], int],
            accept: Callable[[dict[int, int]], bool] | None) -> dict[int, int]:
    """The greedy loop of reduce_shapes over size classes."""
    while largest(size) > budget:
        changed = False
        for c in sorted(size, key=lambda k: (-size[k], k)):
            if original[c] in keep_values or c in frozen:
                continue
            cur = size[c]
            taken = {v for k, v in size.items() if original[k] != original[c]} if distinct else set()
            for new in _smaller(cur):
                if new < floors[c] or new in taken:
                    continue
                if c in grouped and new % groups:
                    continue
                trial = {**size, c: new}
                if accept is not None and not accept(trial):
                    continue
                size = trial
                changed = True
                break
            if changed:
                break
        if not changed:
            break
    return size


def _smaller(size: int) -> tuple[int, ...]:
    """The sizes `size` may shrink to: a half and a quarter that divide it, keeping a power of two
    a power of two; an odd size shrinks to odd sizes (8205 -> 4103 -> 2051 ...) so an irregular
    shape stays irregular (a tail in every tile, no multiple of the cube tiles) and still fits the
    worker's memory. Any other size keeps only the halvings that divide it."""
    if size % 2:
        return tuple(h | 1 for h in (size // 2, size // 4) if h > 1)
    return tuple(h for h in (size // 2, size // 4) if h and size % (size // h) == 0)


def largest_input(shapes: Mapping[str, Sequence[int]]) -> int:
    return max((math.prod(s) for s in shapes.values()), default=0)


# ------------------------------------------------------------------------------ tile counts
# The shrink above stops at the first size that keeps the design, which for a tiled reduction is
# exactly two tiles (KernelBench level-2 14: hidden 8192 shrunk to 2048, two tiles of 1024). A
# kernel that hard-codes that width or that count then passes. So every counted axis (a tiled
# reduction or scan axis, a matmul's K) is then moved to an odd number of tiles, at least three,
# and a second trial runs at the next odd count: no width or count written into a kernel can equal
# both, and none equals a power-of-two shrink of the task's size.
MAX_SPREAD_PROBES = 8
SPREAD_GROWTH = 1.5
"""How far past the element limit the tile counts may take a test that sat at it: a third tile on an
axis the shrink left at two grows it by half (KernelBench level-2 14: batch 1024 is held by its last
kernel's tile, so hidden 2048 -> 3072 takes its product from 2M to 3M elements). The work bound
(MAX_TEST_WORK) still holds."""
SECOND_GROWTH = 2.0
"""The same for the second size: twice the shrink's, four tiles where it left two (five would be 2.5x),
so an axis the limit pins still runs a count the first size did not."""


@dataclass(frozen=True)
class AxisCount:
    """One counted axis at a candidate: its size there, its tile, and its size in the task."""

    what: str       # "reduction axis 1", "K", "kernel 2 (sum): reduction axis 1"
    size: int
    step: int
    full: int

    @property
    def count(self) -> int:
        return ceil_div(self.size, self.step)

    @property
    def full_count(self) -> int:
        return ceil_div(self.full, self.step)

    @property
    def tail(self) -> int:
        return self.size % self.step


def counted_axes(keep: DesignToKeep, shape: Sequence[int], matmul: tuple[int, int, int] | None = None,
                 tile_shape: Sequence[int] | None = None, prefix: str = "") -> list[AxisCount]:
    """The axes of `keep` whose tile count the test chooses: a tiled reduction or scan axis (of the
    geometry; not when the tile is another tensor's) and a matmul's K under its L1 cube tile, each
    only when the task's size spans more than one tile (one tile stays one: the design covers it)."""
    out: list[AxisCount] = []
    shape = tuple(shape)
    own = keep.tile_shape is not None and tile_shape is not None
    ax = keep.reduce_axis
    if (keep.tile and ax is not None and not own and len(keep.tile) == len(shape) == len(keep.shape)
            and 0 <= ax < len(shape) and keep.tile[ax] > 1 and keep.shape[ax] > keep.tile[ax]):
        out.append(AxisCount(f"{prefix}reduction axis {ax}", shape[ax], keep.tile[ax], keep.shape[ax]))
    if keep.matmul and keep.cube and matmul and keep.cube[1] > 1 and keep.matmul[1] > keep.cube[1]:
        out.append(AxisCount(f"{prefix}K", matmul[1], keep.cube[1], keep.matmul[1]))
    return out


def count_targets(full: int, step: int, avoid: int | None = None, tries: int = 3) -> tuple[int, ...]:
    """The tile counts to try on a counted axis, best first: the odd counts from 3 up, then, where no
    odd count can be had (a matmul whose M, K and N are one size: every odd multiple of a K tile of 128
    misses a whole N tile of 256), the even ones from 4 up; never more than the task has (a test
    larger than the task checks a case it never runs), never `avoid` (the first trial's count), at
    most `tries` of each kind."""
    top = ceil_div(full, step)
    odd = [c for c in range(3, top + 1, 2) if c != avoid][:tries]
    even = [c for c in range(4, top + 1, 2) if c != avoid][:tries]
    return (*odd, *even)


def sized_for(size: int, step: int, count: int) -> int:
    """The size with `count` tiles of `step` that keeps the tail `size` has (or its lack of one)."""
    tail = size % step
    return (count - 1) * step + tail if tail else count * step


@dataclass(frozen=True)
class Probe:
    """What a candidate's sizes give: its counted axes, whether it keeps the design, its cost."""

    axes: tuple[AxisCount, ...]
    kept: bool
    elements: int
    iterations: int = 1

    @property
    def work(self) -> int:
        return self.elements * max(self.iterations, 1)


@dataclass
class Spread:
    """The sizes of one trial, its counted axes there, and a note for each axis left off its count."""

    values: dict[Any, int]
    axes: tuple[AxisCount, ...]
    notes: list[str]
    probe: Probe | None


def spread(values: Mapping[Any, int], knobs: Sequence[Any], probe: Callable[[dict[Any, int]], Probe | None],
           avoid: Mapping[str, int] | None = None, work_limit: int = MAX_TEST_WORK) -> Spread:
    """Move each counted axis of the candidate `values` to the first count of count_targets it can
    take (3 tiles, else 5, ...; `avoid` names each axis's count in the first trial, so a second trial
    gives it another) by changing one knob (a size class, a size constant) by the ratio of the target
    size to the axis's size. A change is taken only when the design is still kept, every axis already
    settled keeps its count, and the work (elements x loop iterations) stays within `work_limit` (or
    the candidate's own, when that is larger). Pure: `probe` judges."""
    cur = dict(values)
    base = probe(cur)
    if base is None:
        return Spread(cur, (), [], None)
    notes: list[str] = []
    settled: dict[str, int] = {}
    last = base
    for axis in base.axes:
        now = next((a for a in last.axes if a.what == axis.what), None)
        if now is None:
            continue
        avoided = (avoid or {}).get(now.what)
        targets = count_targets(now.full, now.step, avoided)
        if not targets or (avoided is None and now.count in targets[:1]):
            settled[now.what] = now.count
            if not targets and now.count < 3 and avoided is None:
                notes.append(f"{now.what} stays at {now.count} tile(s) of {now.step}: the task has "
                             f"{now.full_count}, fewer than three")
            continue
        found = _move(cur, knobs, probe, now, targets, settled, max(work_limit, base.work))
        if found is None:
            settled[now.what] = now.count
            notes.append(f"{now.what} stays at {now.count} tiles of {now.step}: no size that keeps the design "
                         f"gives it {' or '.join(map(str, targets))} within the test's bound of "
                         f"{work_limit} element-iterations")
            continue
        cur, last = found
        settled[now.what] = next(a.count for a in last.axes if a.what == now.what)
        if settled[now.what] % 2 == 0 and avoided is None:
            notes.append(f"{now.what} runs {settled[now.what]} tiles of {now.step}: no odd count keeps the design "
                         "(another axis tied to its size needs whole tiles of another step)")
    return Spread(cur, last.axes, notes, last)


def _move(cur: dict[Any, int], knobs: Sequence[Any], probe: Callable[[dict[Any, int]], Probe | None],
          now: AxisCount, targets: Sequence[int], settled: Mapping[str, int], limit: int
          ) -> tuple[dict[Any, int], Probe] | None:
    """The first target count `now`'s axis reaches by changing one knob, and the candidate there.
    At most MAX_SPREAD_PROBES candidates are judged per axis (a module's each rewrites its task): the
    knob whose value is the axis's size first, the others only when none is."""
    direct = [k for k in knobs if cur[k] == now.size]
    order = direct or sorted(knobs, key=lambda k: (-cur[k], str(k)))
    budget = MAX_SPREAD_PROBES
    for want in targets:
        target = sized_for(now.size, now.step, want)
        for k in order:
            v = cur[k]
            if (v * target) % now.size:
                continue
            nv = v * target // now.size
            if nv == v or nv < 1:
                continue
            if budget <= 0:
                return None
            budget -= 1
            cand = {**cur, k: nv}
            q = probe(cand)
            if q is None or not q.kept or q.work > limit:
                continue
            got = {a.what: a.count for a in q.axes}
            if got.get(now.what) == want and all(got.get(w) == c for w, c in settled.items()):
                return cand, q
    return None


def describe_counts(axes: Sequence[AxisCount]) -> list[dict[str, object]]:
    """The counted axes for the report: what, the tile, the count at the test and in the task, why."""
    out: list[dict[str, object]] = []
    for a in axes:
        why = ("an odd number of tiles, at least three: no width or tile count written into a kernel matches it"
               if a.count >= 3 and a.count % 2 else
               f"the task's own {a.full_count} tile(s): fewer than three" if a.full_count < 3 else
               "at least three tiles; no odd count keeps the design here (see notes)" if a.count >= 3 else
               "the design could not take three tiles or more here (see notes)")
        out.append({"axis": a.what, "size": a.size, "tile": a.step, "tiles": a.count, "task_tiles": a.full_count,
                    "tail": a.tail, "why": why})
    return out
