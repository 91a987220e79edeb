"""The cost estimate: a design's time in the cost model, from counts the design decides, no compile.

Why it exists: the documents' order is a good start but the cost model often disagrees (a tile
30% slower than the best qualified one, a loop count 6% slower), and measuring every candidate
takes minutes to hours. The estimate is a small log-linear model per operator family,

    log(us) = intercept + size * log(elements) + sum_i coefficient_i * feature_i(design),

whose coefficients are pack data (estimate.toml) fitted to SIM measurements by
`pypto-tui kb calibrate` (which records the pypto version they were measured on). Each feature is
the log of a count the tile and the loop decide (see `features`). Within one task only the
features change, so the coefficients alone decide the order; `intercept` and `size` only turn it
into microseconds for display.

The estimate is evidence, not the truth: by default the recommendation keeps the documents' order
and the estimate's pick is shown beside it (`ranking = "estimate"` in the pack switches). It only
ever reorders candidates the rules have qualified; a hard rule is never overridden. A family the
pack has no coefficients for gets no estimate, and says so.

Plain Python (no numpy): `tile` one-shots call it on every qualified candidate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pypto_tui.findings import cites
from pypto_tui.kb import CostFit, KnowledgeBase
from pypto_tui.shapes import Shape, ceil_div

# What a caller hands the ranking: the estimated µs of one candidate (a tile, a loop count), or
# None when the estimate does not apply to it (the pack says it cannot compile, no fit, ...).
TileCost = Callable[[Shape], float | None]
LoopCost = Callable[[int], float | None]

# One-sided 95% bound on a normal error: how far below its estimate a candidate may still land.
CONFIDENCE_Z = 1.645
# The least spread a guided sweep assumes: a fit's error on a task it has not seen is rarely
# below 10%, and a family fitted on one or two tasks can look tighter than it is.
SEARCH_ERROR_FLOOR = 0.10
# Half of the 192 KB unified buffer: a tile this large leaves no room for a second buffer.
UB_HALF_BYTES = 65536


@dataclass(frozen=True, slots=True)
class Point:
    """One design as the estimate sees it: the main tensor, its tile, and the loop (if any)."""

    shape: Shape
    itemsize: int
    reduce_axes: tuple[int, ...]     # the axes the op reduces over (empty: none)
    tile: Shape
    loop_axis: int = 0
    loop_count: int | None = None


def features(p: Point, cores: int, elements_per_task: float = 0.0, tile_overhead: float = 0.0) -> dict[str, float]:
    """The design's counts, each as a natural log (the names are vocabulary.ESTIMATE_FEATURES).

    tiles          every tile of the tensor
    rows           rows of one tile (its separate contiguous runs)
    groups         independent tile groups: tiles that do not share a reduction
    segments       tiles one reduction chains together (the segments of its reduce axes)
    waves          rounds of one loop iteration's groups over the vector cores
    iterations     iterations of a loop over independent chunks (1 without one)
    serial         iterations of a loop along a reduce axis: each adds its partial result to the
                   previous one's, so they run one after another (1 otherwise)
    big_split      a reduction split over several tiles that each fill half the unified buffer or
                   more (the log of the fill times the squared log of the segments: 0 unless both)
    balance        the scheduler's work against the cores': log(tasks + chain / elements_per_task),
                   where tasks are what the scheduler hands out one by one (the groups; in a loop,
                   each iteration's groups and reduction partials; a reduction over tiles that fill
                   half the unified buffer, a task per extra segment) and chain what one core works
                   through in a row: its tiles
                   (segments x waves), each costing its elements plus `tile_overhead` elements'
                   worth of fixed cost. Few big groups leave cores idle and make long chains; many
                   small ones queue at the scheduler: the minimum is where the two balance.
                   `elements_per_task` (0: tasks alone) and `tile_overhead` are fitted per family.
    """
    shape, tile = p.shape, p.tile
    n = 1
    for s, t in zip(shape, tile, strict=True):
        n *= ceil_div(s, t)
    elements = math.prod(tile)
    rows = math.prod(tile[:-1]) if len(tile) > 1 else 1
    axes = p.reduce_axes
    segments = math.prod(ceil_div(shape[a], tile[a]) for a in axes)
    groups = max(1, n // segments)
    iterations, per_iter, chained = 1, groups, segments
    tasks = groups
    if p.loop_count and p.loop_count > 1:
        total = shape[p.loop_axis]
        batch = ceil_div(total, p.loop_count)
        iterations = ceil_div(total, batch)
        view = tuple(batch if i == p.loop_axis else s for i, s in enumerate(shape))
        cut = tuple(min(t, v) for t, v in zip(tile, view, strict=True))
        n_iter = 1
        for s, t in zip(view, cut, strict=True):
            n_iter *= ceil_div(s, t)
        chained = math.prod(ceil_div(view[a], cut[a]) for a in axes)
        per_iter = max(1, n_iter // chained)
        # every iteration hands out its groups and the partial results of its reductions
        tasks = iterations * (per_iter + (chained if axes else 0))
        if p.loop_axis in axes:
            chained *= iterations          # a reduction along the loop adds up across iterations
    waves = ceil_div(per_iter, max(1, cores))
    chain = chained * waves * (elements + tile_overhead)
    fill = elements * p.itemsize / UB_HALF_BYTES
    if fill >= 1 and segments > 1:
        # A reduction over tiles that fill half the unified buffer is handed out in more tasks than
        # its groups (cost model, max_over_dim (16,256,256): (1,64,256) 48 tasks, (1,32,256) 16);
        # a task per extra step approximates it (64 there) and halves the worst held-out static
        # pick (benchmarks/README.md).
        tasks += groups * (segments - 1)
    return {
        "tiles": math.log(n),
        "rows": math.log(rows),
        "groups": math.log(groups),
        "segments": math.log(segments),
        "waves": math.log(waves),
        "iterations": 0.0 if p.loop_axis in axes else math.log(iterations),
        "serial": math.log(iterations) if p.loop_axis in axes else 0.0,
        "big_split": math.log(max(1.0, fill * 2)) * math.log(segments) ** 2,
        "balance": math.log(tasks + (chain / elements_per_task if elements_per_task > 0 else 0.0)),
    }


@dataclass(frozen=True, slots=True)
class Estimator:
    """A family's fit, ready to price designs."""

    fit: CostFit
    cores: int

    def log_relative(self, p: Point) -> float:
        """The part of log(us) the design decides (what orders candidates within a task)."""
        f = features(p, self.cores, self.fit.elements_per_task, self.fit.tile_overhead)
        return sum(c * f[name] for name, c in self.fit.coefficients.items())

    def us(self, p: Point) -> float:
        """Estimated microseconds (the order is trustworthy; the absolute figure is rougher)."""
        size = math.log(max(1, math.prod(p.shape)))
        return math.exp(self.fit.intercept + self.fit.size * size + self.log_relative(p))

    def describe(self) -> str:
        f = self.fit
        spread = f"±{100 * (math.exp(f.error) - 1):.0f}%" if f.error else "error unknown"
        return f"the '{f.name}' estimate fitted on pypto {f.pypto} ({spread}, {f.samples} runs)"


def estimator_for(kb: KnowledgeBase, family: str | None, op: str | None = None) -> tuple[Estimator | None, str]:
    """The pack's estimate for an op (its own fit, else its family's), or None and why not."""
    if kb.estimate is None:
        return None, f"pack '{kb.name}' has no estimate.toml: the documents' order decides"
    fit = kb.estimate.fit_for(family, op)
    if fit is None:
        what = f"'{op}' or its family '{family}'" if op and op != family else f"family '{family}'"
        return None, (f"no fitted estimate for {what} in pack '{kb.name}': the documents' order decides "
                      "(`pypto-tui kb calibrate` fits one)")
    return Estimator(fit, kb.chip.aiv_cores), ""


def ranks_by_estimate(kb: KnowledgeBase) -> bool:
    """Whether the pack lets the estimate decide every recommendation (`ranking = "estimate"`);
    `ranking = "auto"` decides per family and sweep (rank_decision)."""
    return kb.estimate is not None and kb.estimate.ranking == "estimate"


@dataclass(frozen=True)
class RankDecision:
    """Which order a recommendation follows for one family and sweep, and why (shown to the user)."""

    estimate_decides: bool
    why: str = ""


NO_DECISION = RankDecision(False)
SWEEP_WORDS = {"tiles": "tile", "loops": "loop-count"}


# How far below the smallest tensor a fit was measured on (CostFit.elements) the estimate may still rank.
# A fit is a line in log(elements) plus per-task terms; above its data, throughput dominates and its picks
# held (level 1's 1-2G-element norms verify with them), but far below it the fixed costs of a launch and a
# task that it never saw dominate: a 4096-element norm, 64x below the norm fit's smallest, was mispicked.
RANGE_SLACK = 8


def rank_decision(kb: KnowledgeBase, fit: CostFit | None, sweep: str, elements: int | None = None) -> RankDecision:
    """`ranking = "estimate"`: the estimate decides wherever it has a fit; "rules": the documents'
    order always; "auto": the estimate for a family whose measured picks on this kind of sweep
    (estimate.toml [fit.X.picks.tiles|loops]: pick time / exhaustive optimum) beat the documents',
    the documents' order where they do not or nothing was measured."""
    ranking = kb.estimate.ranking if kb.estimate is not None else "rules"
    if fit is None or ranking == "rules":
        return RankDecision(False, "")
    if ranking == "estimate":
        return RankDecision(True, "the pack ranks by the estimate (ranking = \"estimate\")")
    word = SWEEP_WORDS.get(sweep, sweep)
    lo_hi = fit.elements
    if elements is not None and lo_hi is not None and elements < lo_hi[0] / RANGE_SLACK:
        # measured: the norm fit (tensors of 262144-67108864 elements) picked (4, 128) for a (32, 128) bf16
        # RMSNorm, 3.42 us in SIM, where the documents' (32, 128) takes 1.53 us (benchmarks/bench_peers.py)
        return RankDecision(False, f"the documents' order decides: {elements} elements is far below the "
                                   f"{lo_hi[0]}-{lo_hi[1]} the '{fit.name}' estimate was measured on")
    rec = fit.picks.get(sweep)
    if rec is None or rec.sweeps == 0:
        return RankDecision(False, f"the documents' order decides: the '{fit.name}' estimate's {word} picks were "
                                   "never measured against it (ranking = \"auto\")")
    score = (f"over {rec.sweeps} measured {word} sweep(s) its picks ran {rec.estimate:.3f}x the optimum, the "
             f"documents' {rec.rules:.3f}x")
    if rec.estimate_wins:
        return RankDecision(True, f"the estimate decides: {score} (ranking = \"auto\")")
    return RankDecision(False, f"the documents' order decides: {score} (ranking = \"auto\")")


# ------------------------------------------------------------------------------------ ranking
@dataclass(frozen=True)
class Ranking:
    """Candidates priced by the estimate: `values[i]` for the i-th candidate in the documents'
    order (None: not priced), `best` the index of the cheapest, `order` every index, cheapest
    first (unpriced ones last, in the documents' order)."""

    values: tuple[float | None, ...]
    best: int | None
    order: tuple[int, ...]
    note: str = ""


C = TypeVar("C")


@cites("SIM.cost-estimate")
def rank_by_estimate(candidates: Sequence[C], cost: Callable[[C], float | None] | None, note: str = "") -> Ranking:
    """Price each candidate (given in the documents' order); ties keep that order."""
    if cost is None:
        return Ranking(tuple(None for _ in candidates), None, tuple(range(len(candidates))), note)
    values = tuple(cost(c) for c in candidates)
    priced = sorted((v, i) for i, v in enumerate(values) if v is not None)
    order = tuple(i for _, i in priced) + tuple(i for i, v in enumerate(values) if v is None)
    best = priced[0][1] if priced else None
    if best is None and not note:
        note = "the estimate prices none of these candidates"
    return Ranking(values, best, order, note)


def lower_bound(value: float, scale: float, error: float, measured: int) -> float:
    """How fast a candidate estimated at `value` might really be, once `measured` runs of the same
    task have set `scale` (measured / estimated): the one-sided 95% bound of a log-normal error
    whose spread is the fit's `error` (at least SEARCH_ERROR_FLOOR), widened for a scale read off
    few runs."""
    spread = CONFIDENCE_Z * max(error, SEARCH_ERROR_FLOOR) * math.sqrt(1.0 + 1.0 / max(1, measured))
    return value * scale * math.exp(-spread)


@dataclass(frozen=True)
class Reordered:
    """The qualified candidates priced, and the order the recommendation follows: `order` holds
    positions of the documents' order (unchanged unless the pack ranks by the estimate), `values`
    the price per position (None: unpriced), `best` the cheapest qualified position."""

    order: tuple[int, ...]
    values: dict[int, float]
    best: int | None
    ranking: str
    note: str


@cites("SIM.cost-estimate")
def reorder(kb: KnowledgeBase, cost: TileCost | None, total: int, positions: Sequence[int], tiles: Sequence[Shape],
            note: str = "", decides: bool | None = None) -> Reordered:
    """Price the qualified tiles: `tiles[j]` sits at `positions[j]` of the documents' order of
    `total` candidates. When the pack ranks by the estimate, the priced qualified tiles come first,
    cheapest first, then the rest as the documents order them: the estimate never lifts a tile the
    rules did not qualify. `decides` says whether the estimate orders them (None: the pack's
    ranking switch alone, as for a pack with `ranking = "estimate"`)."""
    ranking = rank_by_estimate(tiles, cost, note)
    values = {positions[j]: v for j, v in enumerate(ranking.values) if v is not None}
    best = positions[ranking.best] if ranking.best is not None else None
    keep = tuple(range(total))
    if cost is None or best is None or not (ranks_by_estimate(kb) if decides is None else decides):
        return Reordered(keep, values, best, "rules", ranking.note)
    first = [positions[j] for j in ranking.order if ranking.values[j] is not None]
    seen = set(first)
    return Reordered(tuple(first) + tuple(i for i in keep if i not in seen), values, best, "estimate", ranking.note)
