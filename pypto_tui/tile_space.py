"""The candidate tile space: enumerate every tile worth trying and order it by the documents' rules.

Two engines, one order. A small space (the usual 2-D and 3-D shapes: a few hundred tiles) is
ranked in plain Python, so the one-shot `pypto-tui tile` never pays numpy's import (it costs more
than the whole ranking). A large one (a 4-D shape with awkward sizes has hundreds of thousands of
tiles) is ranked with numpy. Both produce a `Space` with the same rows in the same order (a
property test checks it); `tiles.rank_candidates` turns the top rows into candidates.

The order (a sort key, most significant first): no tile > shape except forced alignment padding;
contiguity >= 1 KB (unless nothing reaches it); no loop needed; while the reduce axis is split, no
budget on other axes; the reduce axis used; the reduce-axis sweet spot 16 -> 32 -> 64; fewer reduce
segments; a fuller budget; fewer tiles; a longer contiguous run; then the tile itself (ascending,
axis 0 first), so the order is total and both engines agree row for row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import product

from pypto_tui.kb import KnowledgeBase
from pypto_tui.shapes import Shape, ceil_div

MAX_GRID = 1 << 21
"""Most candidate tiles ranked at once (the default pack's 4-D spaces have a few hundred thousand)."""
PYTHON_MAX = 4096
"""Spaces up to this many tiles (an upper bound, before the budget prunes) are ranked without numpy."""
MAX_AXIS_VALUES = 32
"""Most tile sizes tried on one axis. A highly composite axis (720720 has 240 divisors, about 150 of
them within the budget) made a 4-D space of 41,937 tiles that took 29-37 ms to rank (the aim is
< 20 ms); beyond this many, the powers of two, the axis itself and divisors spread evenly on a log
scale are kept, which still offers a size near every power of two."""


@dataclass(frozen=True)
class Space:
    enumerated: int
    order: Sequence[int]
    """Row indices, best first."""
    tile: Callable[[int], Shape]
    qualified: Callable[[int], bool]
    sweet: Callable[[int], int]
    spend: Callable[[int], int]
    preset_row: int | None
    fallback: bool
    reachable: bool
    empty: str | None = None
    """Why there is no row (None when there are rows)."""

    @property
    def qualified_count(self) -> int:
        return sum(1 for r in self.order if self.qualified(r))


def axis_values(n: int, cap: int, last: bool = False, unit: int = 1) -> list[int]:
    """Tile sizes worth trying on an axis of length n: powers of two and divisors up to cap.

    On the last axis only 32-byte aligned sizes qualify; when the axis itself cannot be aligned,
    the aligned round-up (a little padding) is offered too, because nothing smaller is legal.
    At most `cap` divisions are tried, whatever n is.
    """
    limit = min(n, cap)
    vals = {1 << k for k in range(limit.bit_length()) if (1 << k) <= limit}
    root = math.isqrt(n)
    if root <= limit:  # divisor pairs up to sqrt(n): at most `cap` steps
        for small in range(1, root + 1):
            if n % small == 0:
                vals.update(d for d in (small, n // small) if d <= limit)
    else:  # a huge axis: only divisors <= cap can be tile sizes, so test those directly
        vals.update(d for d in range(1, limit + 1) if n % d == 0)
    if n <= cap:
        vals.add(n)
    if last:
        vals = {v for v in vals if v % unit == 0}
        if n % unit:
            up = ceil_div(n, unit) * unit
            if up <= cap:
                vals.add(up)
    return _thin(sorted(vals), n)


def _thin(vals: list[int], n: int) -> list[int]:
    """At most MAX_AXIS_VALUES sizes: the powers of two, the axis itself (and any padded round-up,
    the largest value) always; the other divisors evenly spaced in their sorted (log-like) order."""
    if len(vals) <= MAX_AXIS_VALUES:
        return vals
    must = {v for v in vals if v & (v - 1) == 0} | {v for v in vals if v >= n}
    rest = [v for v in vals if v not in must]
    room = max(MAX_AXIS_VALUES - len(must), 0)
    picked = {rest[i * len(rest) // room] for i in range(room)} if room and rest else set()
    return sorted(must | picked)


def per_axis(kb: KnowledgeBase, shape: Shape, unit: int) -> list[list[int]]:
    cap = kb.limits.max_elements
    last = len(shape) - 1
    out = []
    for axis, n in enumerate(shape):
        vals = axis_values(n, cap, axis == last, unit)
        out.append(vals or [ceil_div(n, unit) * unit])
    return out


def rank_space(kb: KnowledgeBase, shape: Shape, b: int, rd: int | None, reducing: bool, unit: int,
               preset: Shape | None) -> Space:
    """The ranked space, by the engine that suits its size."""
    values = per_axis(kb, shape, unit)
    if math.prod(len(v) for v in values) <= PYTHON_MAX:
        return _rank_python(kb, shape, values, b, rd, reducing, unit, preset)
    return _rank_numpy(kb, shape, values, b, rd, reducing, unit, preset)


def _empty(enumerated: int, why: str) -> Space:
    return Space(enumerated, (), lambda r: (), lambda r: False, lambda r: 0, lambda r: 1, None, False, False, why)


def _ub(kb: KnowledgeBase, prod: int, b: int, reducing: bool) -> float:
    raw = prod * b
    return raw * kb.chip.reduce_ub_factor + kb.chip.reduce_ub_extra_bytes if reducing else (
        raw * kb.chip.elementwise_ub_factor)


# ------------------------------------------------------------------------------------ plain Python
def _rank_python(kb: KnowledgeBase, shape: Shape, values: list[list[int]], b: int, rd: int | None,
                 reducing: bool, unit: int, preset: Shape | None) -> Space:
    cap = kb.limits.max_elements
    last = len(shape) - 1
    grid = [t for t in product(*values) if math.prod(t) <= cap]
    enumerated = len(grid)
    if not grid:
        return _empty(0, f"no tile fits prod <= {cap} with an aligned last dim")
    grid = [t for t in grid if _ub(kb, math.prod(t), b, reducing) <= kb.chip.ub_bytes]
    if not grid:
        return _empty(enumerated, "every tile overflows the unified buffer")
    need = kb.limits.contiguous_bytes
    pad_axis = shape[last] % unit != 0
    forced = [t[last] > shape[last] and pad_axis for t in grid]
    waste = [int(any(x > s for x, s in zip(t, shape, strict=True)) and not f)
             for t, f in zip(grid, forced, strict=True)]
    contig_ok = [t[last] * b >= need for t in grid]
    fallback = not any(ok and not w for ok, w in zip(contig_ok, waste, strict=True))
    reachable = shape[last] * b >= need or any(forced)
    order_ladder = list(kb.ladders.reduce_axis)
    sweet, spend, keys = [], [], []
    for t, w, ok in zip(grid, waste, contig_ok, strict=True):
        prod = math.prod(t)
        auto = math.prod(ceil_div(s, x) for s, x in zip(shape, t, strict=True))
        if rd is not None:
            segments = ceil_div(shape[rd], t[rd])
            spend_pen = math.prod(x for i, x in enumerate(t) if i not in (rd, last)) if segments > 1 else 1
            if rd != last:
                sw = order_ladder.index(t[rd]) if t[rd] in order_ladder else len(order_ladder)
                unused = int(t[rd] == 1 and shape[rd] > 1)
            else:
                sw, unused = 0, 0
        else:
            segments, spend_pen, sw, unused = 1, 1, 0, 0
        sweet.append(sw)
        spend.append(spend_pen)
        keys.append((w, 0 if fallback else int(not ok), int(auto > kb.limits.max_auto_tiles), spend_pen, unused, sw,
                     segments, -prod, auto, -t[last] * b, *t))
    order = sorted(range(len(grid)), key=keys.__getitem__)
    qualified = [not w and (fallback or ok) for w, ok in zip(waste, contig_ok, strict=True)]
    preset_row = grid.index(tuple(preset)) if preset is not None and tuple(preset) in grid else None
    return Space(enumerated, order, grid.__getitem__, qualified.__getitem__, sweet.__getitem__, spend.__getitem__,
                 preset_row, fallback, reachable)


# ------------------------------------------------------------------------------------ numpy
def _rank_numpy(kb: KnowledgeBase, shape: Shape, values: list[list[int]], b: int, rd: int | None,
                reducing: bool, unit: int, preset: Shape | None) -> Space:
    import numpy as np

    cap = kb.limits.max_elements
    last = len(shape) - 1
    # Build the grid axis by axis, pruning partial products over the budget as we go.
    grid = np.ones((1, 0), dtype=np.int64)
    partial = np.ones(1, dtype=np.int64)
    for vals_list in values:
        vals = np.array(vals_list, dtype=np.int64)
        rows = np.repeat(np.arange(grid.shape[0]), vals.size)
        cols = np.tile(vals, grid.shape[0])
        new_partial = partial[rows] * cols
        keep = new_partial <= cap
        grid = np.concatenate([grid[rows][keep], cols[keep][:, None]], axis=1)
        partial = new_partial[keep]
        if grid.shape[0] > MAX_GRID:
            return _empty(int(grid.shape[0]), f"more than {MAX_GRID} candidate tiles: give one with --tile (the "
                                              "pack's budget allows too many combinations to rank)")
    enumerated = int(grid.shape[0])
    if enumerated == 0:
        return _empty(0, f"no tile fits prod <= {cap} with an aligned last dim")

    shp = np.array(shape, dtype=np.int64)
    prod = partial
    auto = np.prod(-(-shp // grid), axis=1)
    contig = grid[:, last] * b
    raw_ub = prod * b
    ub = (raw_ub * kb.chip.reduce_ub_factor + kb.chip.reduce_ub_extra_bytes) if reducing else (
        raw_ub * kb.chip.elementwise_ub_factor)
    hard_ok = ub <= kb.chip.ub_bytes
    grid, prod, auto, contig = grid[hard_ok], prod[hard_ok], auto[hard_ok], contig[hard_ok]
    if grid.shape[0] == 0:
        return _empty(enumerated, "every tile overflows the unified buffer")

    waste = np.any(grid > shp, axis=1)
    forced_pad = (grid[:, last] > shp[last]) & (shape[last] % unit != 0)
    waste_pen = (waste & ~forced_pad).astype(np.int64)
    reachable = shape[last] * b >= kb.limits.contiguous_bytes or bool(forced_pad.any())
    contig_ok = contig >= kb.limits.contiguous_bytes
    fallback = not bool((contig_ok & (waste_pen == 0)).any())
    contig_pen = (~contig_ok).astype(np.int64) if not fallback else np.zeros(len(grid), dtype=np.int64)
    loop_pen = (auto > kb.limits.max_auto_tiles).astype(np.int64)
    if rd is not None:
        segments = -(-shp[rd] // grid[:, rd])
        mask = np.ones(len(shape), dtype=bool)
        mask[[rd, last]] = False
        spend = np.prod(grid[:, mask], axis=1) if mask.any() else np.ones(len(grid), dtype=np.int64)
        spend_pen = np.where(segments > 1, spend, 1)
        if rd != last:
            ladder = list(kb.ladders.reduce_axis)
            sweet = np.full(len(grid), len(ladder), dtype=np.int64)
            for i, v in enumerate(ladder):
                sweet[grid[:, rd] == v] = i
            unused = (grid[:, rd] == 1) & (shape[rd] > 1)
        else:
            sweet = np.zeros(len(grid), dtype=np.int64)
            unused = np.zeros(len(grid), dtype=bool)
    else:
        segments = np.ones(len(grid), dtype=np.int64)
        spend_pen = np.ones(len(grid), dtype=np.int64)
        sweet = np.zeros(len(grid), dtype=np.int64)
        unused = np.zeros(len(grid), dtype=bool)

    # np.lexsort sorts by the LAST key first: the sort key of the module docstring, reversed.
    keys = [*(grid[:, i] for i in reversed(range(len(shape)))), -contig, auto, -prod, segments, sweet,
            unused.astype(np.int64), spend_pen, loop_pen, contig_pen, waste_pen]
    order = np.lexsort(keys).tolist()
    qualified = ((waste_pen == 0) & (contig_pen == 0)).tolist()
    preset_row = None
    if preset is not None:
        hits = np.nonzero(np.all(grid == np.array(preset), axis=1))[0]
        preset_row = int(hits[0]) if hits.size else None
    sweet_l, spend_l = sweet.tolist(), spend_pen.tolist()
    return Space(enumerated, order, lambda r: tuple(int(x) for x in grid[r]), qualified.__getitem__,
                 sweet_l.__getitem__, spend_l.__getitem__, preset_row, fallback, reachable)
