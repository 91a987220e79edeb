"""The loop planner (rules P6, O2): whether to loop, along which axis, and how many times.

Loop counts are tried in the documents' log-scale order (16, 32, then 8, 64, then 1, 128) and
BASIC_BATCH is always derived from the count, never the other way round. A count whose batch does
not divide the axis would make the last constant-shape view run past the end; the planner flags
it and offers the two ways out: a count whose batch divides the axis, or a main loop plus one tail.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pypto_tui.errors import InputError
from pypto_tui.estimate import LoopCost, rank_by_estimate, ranks_by_estimate
from pypto_tui.examples import ex, examples
from pypto_tui.findings import Finding, cites, rule_finding
from pypto_tui.kb import KnowledgeBase
from pypto_tui.plan import LoopCandidate, LoopChoice
from pypto_tui.shapes import Shape, auto_tiles, ceil_div, check_shape, normalise_axis, parse_tile_for
from pypto_tui.vocabulary import LoopWhy, TailPreference, TailStrategy

Why = LoopWhy

MAX_DIVISOR_SEARCH = 1 << 16
"""Loop counts tried when looking for one whose batch divides the axis (beyond it, none is useful)."""


@dataclass(frozen=True)
class LoopPlan:
    shape: Shape
    dtype: str
    tile: Shape
    needs_loop: bool
    reason: str
    axis: int
    total: int
    auto_tiles: int
    candidates: tuple[LoopCandidate, ...]
    recommended: LoopCandidate | None
    alternatives: tuple[LoopCandidate, ...]
    findings: tuple[Finding, ...]
    best_by_rules: LoopCandidate | None = None
    best_by_estimate: LoopCandidate | None = None
    ranking: str = "rules"          # which order `recommended` follows: "rules" or "estimate"
    estimate_note: str = ""
    unit: int = 1  # elements per unit of the loop axis (total and BASIC_BATCH count units)
    max_chunk: int | None = None  # elements one iteration may hold on the loop axis (a matmul's inner axis)
    ranking_note: str = ""        # why that order decides (the pack's switch, the measured picks)

    def rules_pick_loss(self) -> float | None:
        """How much slower the estimate expects the documents' loop count than its own."""
        a, b = self.best_by_rules, self.best_by_estimate
        if a is None or b is None or not a.estimate_us or not b.estimate_us:
            return None
        return float(a.estimate_us / b.estimate_us)

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_by_rules": self.best_by_rules.to_dict() if self.best_by_rules else None,
            "best_by_estimate": self.best_by_estimate.to_dict() if self.best_by_estimate else None,
            "ranking": self.ranking,
            "estimate_note": self.estimate_note,
            "ranking_note": self.ranking_note,
            "rules_pick_rules": ["O2.loop-log-scale"] if self.best_by_rules else [],
            "rules_pick_expected_loss": self.rules_pick_loss(),
            "unit": self.unit,
            "max_chunk": self.max_chunk,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "tile": list(self.tile),
            "needs_loop": self.needs_loop,
            "reason": self.reason,
            "axis": self.axis,
            "total": self.total,
            "auto_tiles": self.auto_tiles,
            "candidates": [c.to_dict() for c in self.candidates],
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "alternatives": [c.to_dict() for c in self.alternatives],
            "findings": [f.to_dict() for f in self.findings],
        }


@examples(valid=[ex(shape=(16, 256), tile=(16, 256), why="auto")],
          invalid=[ex(shape=(67108864,), tile=(8192,), why="auto", message="auto_tiles 8192 > 2048"),
                   ex(shape=(4096, 4096), tile=(128, 128), why="matmul", message="loop along M")])
@cites("P6.avoid-loops", "POOL.depth-slices")
def loop_need(kb: KnowledgeBase, shape: Shape, tile: Shape, why: Why = "auto",
              chunk: tuple[int, int] | None = None) -> tuple[bool, str, Finding]:
    """Whether a loop is needed, and the reason in words (the documents' reasons, in order).
    `chunk`: (elements on the loop axis, the most one iteration may hold), see `check_chunk`."""
    cap = kb.limits.max_auto_tiles
    n = auto_tiles(shape, tile)
    if n > cap:
        msg = f"auto_tiles {n} > {cap}: split the work into chunks with pypto.loop + view/assemble"
        return True, msg, rule_finding(kb, "P6.avoid-loops", msg, "info")
    if chunk is not None and chunk[0] > chunk[1]:
        msg = (f"the loop axis holds {chunk[0]} elements, more than the {chunk[1]} one matmul takes on its inner "
               f"axis: split it with pypto.loop + view/assemble")
        return True, msg, rule_finding(kb, "P6.avoid-loops", msg, "info")
    if why == "matmul":
        msg = "matmul: loop along M (view -> matmul -> assemble), loop_count from the log scale"
        return True, msg, rule_finding(kb, "P6.avoid-loops", msg, "info")
    if why == "reduce":
        msg = "a reduce axis too long for one pass: accumulate chunk results over a loop"
        return True, msg, rule_finding(kb, "P6.avoid-loops", msg, "info")
    if why == "slices":
        msg = ("one output slice per iteration along the loop axis: its offset is a scalar in each view, so no "
               "gather along it")
        return True, msg, rule_finding(kb, "POOL.depth-slices", msg, "info")
    msg = f"auto_tiles {n} <= {cap}: no loop needed (a loop only adds scheduling work)"
    return False, msg, rule_finding(kb, "P6.avoid-loops", msg, "ok")


@examples(valid=[ex(axis=0)], invalid=[ex(axis=1, message="looping along axis 1")])
@cites("P6.outermost-axis")
def check_outermost(kb: KnowledgeBase, axis: int) -> Finding | None:
    if axis != 0:
        return rule_finding(kb, "P6.outermost-axis", f"looping along axis {axis}: loop along the outermost axis "
                        f"(0) so each chunk is one contiguous block")
    return None


@examples(valid=[ex(total=1024, basic_batch=64, num_iters=16, tail=64)],
          invalid=[ex(total=1000, basic_batch=63, num_iters=16, tail=55, message="8 row(s) past the end")])
@cites("P6.loop-tail")
def check_tail(kb: KnowledgeBase, total: int, basic_batch: int, num_iters: int, tail: int) -> Finding | None:
    if tail == basic_batch:
        return None
    return rule_finding(kb, "P6.loop-tail",
                    f"BASIC_BATCH {basic_batch} does not divide {total}: with a constant view shape the last of "
                    f"{num_iters} chunks would read {basic_batch - tail} row(s) past the end; use a divisor count "
                    f"or {num_iters - 1} main iterations plus a tail view of {tail}")


@examples(valid=[ex(per_iter=2048)], invalid=[ex(per_iter=4195, level="error", message="raise loop_count")])
@cites("P4.auto-tiles")
def check_per_iter_tiles(kb: KnowledgeBase, per_iter: int) -> Finding | None:
    cap = kb.limits.max_auto_tiles
    if per_iter > cap:
        return rule_finding(kb, "P4.auto-tiles", f"still {per_iter} tiles per iteration (> {cap}): raise loop_count",
                        "error")
    return None


@examples(valid=[ex(chunk=65534, max_chunk=65534), ex(chunk=131072, max_chunk=None)],
          invalid=[ex(chunk=65536, max_chunk=65534, message="raise loop_count")])
@cites("HW.matmul-inner-axis")
def check_chunk(kb: KnowledgeBase, chunk: int, max_chunk: int | None) -> Finding | None:
    """A loop whose chunk is a matmul's inner axis: 0.2.0 refuses an ND operand whose inner axis is
    65535 or more (FC3000), so one iteration's chunk stays within `max_chunk` elements."""
    if max_chunk is not None and chunk > max_chunk:
        return rule_finding(kb, "HW.matmul-inner-axis", f"{chunk} elements per iteration on the loop axis, the "
                            f"matmul's inner axis, > {max_chunk}: raise loop_count", "error")
    return None


@examples(valid=[ex(shape=(67108864,), tile=(8192,), axis=0, loop_count=16)],
          invalid=[ex(shape=(67108864,), tile=(8192,), axis=0, loop_count=12, message="off the documents' ladder"),
                   ex(shape=(67108864,), tile=(8192,), axis=0, loop_count=128, message="an end point")])
@cites("O2.loop-log-scale", "CL.matmul-basic-batch")
def candidate(kb: KnowledgeBase, shape: Shape, tile: Shape, axis: int, loop_count: int,
              tail_strategy: TailStrategy | None = None, unit: int = 1,
              max_chunk: int | None = None) -> LoopCandidate:
    """One loop count: BASIC_BATCH = ceil_div(total, loop_count), iterations, the tail, per-iteration tiles.

    `unit`: the axis is cut in whole units of this many elements (a conv's output rows of `unit`
    positions each); total, BASIC_BATCH and the tail then count units. `max_chunk`: the most
    elements one iteration may hold on the axis (see `check_chunk`)."""
    if loop_count < 1:
        raise InputError(f"loop count {loop_count} must be a positive whole number")
    total = shape[axis] // unit
    bb = ceil_div(total, loop_count)
    iters = ceil_div(total, bb)
    tail = total - (iters - 1) * bb
    view = tuple(bb * unit if i == axis else s for i, s in enumerate(shape))
    per_iter = auto_tiles(view, tile)
    ring = kb.ladders.loop_ring_of(loop_count)
    fs: list[Finding] = []
    strategy: TailStrategy = tail_strategy or ("divides" if tail == bb else "none")
    if tail_strategy != "main+tail":
        f = check_tail(kb, total, bb, iters, tail)
        if f:
            fs.append(f)
    else:
        fs.append(rule_finding(kb, "P6.loop-tail", f"{iters - 1} main iterations of {bb} plus one tail view of {tail}",
                           "info"))
    f2 = check_per_iter_tiles(kb, per_iter)
    if f2:
        fs.append(f2)
    f3 = check_chunk(kb, bb * unit, max_chunk)
    if f3:
        fs.append(f3)
    if tile[axis] > bb * unit and bb * unit < shape[axis]:  # one pass (count 1) cuts nothing: the tile step's waste
        per = f"BASIC_BATCH {bb}" + (f" x {unit}" if unit > 1 else "")
        fs.append(rule_finding(kb, "P4.no-waste", f"tile {tile[axis]} on the loop axis > the {bb * unit} elements "
                           f"one iteration holds ({per}): the tile is cut down to the chunk"))
    if iters < loop_count:
        fs.append(rule_finding(kb, "O2.loop-log-scale", f"{loop_count} requested, {iters} iterations needed: "
                           f"ceil_div({total}, {bb}) = {iters}", "info"))
    if ring is None:
        fs.append(rule_finding(kb, "O2.loop-log-scale", f"{loop_count} is off the documents' ladder "
                           f"{'/'.join(map(str, kb.ladders.loop_order))}", "info"))
    elif ring == len(kb.ladders.loop_rings) - 1:
        fs.append(rule_finding(kb, "O2.loop-log-scale", f"{loop_count} is an end point: try it only if the middle "
                           f"of the scale does not work", "info"))
    return LoopCandidate(loop_count, bb, iters, tail, view, per_iter, ring, strategy, tuple(fs))


def divisor_near(total: int, loop_count: int) -> int | None:
    """The loop count closest to `loop_count` on a log scale whose BASIC_BATCH divides `total` exactly."""
    best: tuple[float, int] | None = None
    limit = min(total, max(loop_count * 4, 1), MAX_DIVISOR_SEARCH)
    for c in range(1, limit + 1):
        if total % c:
            continue
        d = abs(math.log2(c) - math.log2(loop_count))
        if best is None or d < best[0]:
            best = (d, c)
    return best[1] if best else None


@cites("P6.avoid-loops", "O2.loop-log-scale", "SIM.cost-estimate", "POOL.depth-slices")
def plan_loops(
    kb: KnowledgeBase,
    shape: Sequence[int],
    dtype: str,
    tile: Sequence[int] | str,
    axis: int = 0,
    loop_count: int | None = None,
    why: Why = "auto",
    estimate: LoopCost | None = None,
    estimate_note: str = "",
    unit: int = 1,
    max_chunk: int | None = None,
    estimate_decides: bool | None = None,
    ranking_note: str = "",
) -> LoopPlan:
    """Plan one loop (never nested) along `axis`, candidates in the documents' order.

    `estimate` prices a loop count in µs (SIM.cost-estimate): the counts that pass are priced, the
    cheapest loop is `best_by_estimate`, and when the pack ranks by the estimate (and a loop is
    needed, and the user named no count) it is the recommendation. `unit`: the axis is cut in whole
    units of that many elements; `max_chunk`: the most elements one iteration may hold on it (see
    `candidate`)."""
    shape = check_shape(shape)
    kb.dtype_bytes(dtype)
    t = parse_tile_for(shape, tile)
    ax = normalise_axis(axis, len(shape), "loop axis")
    if unit < 1 or shape[ax] % unit:
        raise InputError(f"loop unit {unit} does not divide axis {ax} of {shape}")
    total = shape[ax] // unit
    needs, reason, need_finding = loop_need(kb, shape, t, why,
                                            None if max_chunk is None else (shape[ax], max_chunk))
    plan_findings: list[Finding] = [need_finding]
    outer = check_outermost(kb, ax)
    if outer and (needs or (loop_count is not None and loop_count > 1)):  # only a loop that runs has a direction
        plan_findings.append(outer)

    counts: list[int] = []
    if loop_count is not None:
        if loop_count < 1:
            raise InputError(f"--loop-count {loop_count} must be a positive whole number")
        counts.append(loop_count)
    counts += [c for c in kb.ladders.loop_order if c not in counts and c <= total]
    if why == "slices" and total not in counts:  # one unit per iteration (POOL.depth-slices)
        counts.insert(0 if loop_count is None else 1, total)

    def at(count: int, tail: TailStrategy | None = None) -> LoopCandidate:
        return candidate(kb, shape, t, ax, count, tail, unit, max_chunk)

    cands = tuple(at(c) for c in counts)
    loops = [c for c in cands if c.ok and c.loop_count > 1]
    priced = rank_by_estimate(loops, (lambda c: estimate(c.loop_count)) if estimate else None,
                              estimate_note)
    price = {c.loop_count: v for c, v in zip(loops, priced.values, strict=True) if v is not None}
    cands = tuple(replace(c, estimate_us=price[c.loop_count]) if c.loop_count in price else c for c in cands)

    alternatives: list[LoopCandidate] = []
    for c in cands:
        if c.has_tail:
            d = divisor_near(total, c.loop_count)
            if d is not None and d not in counts and all(a.loop_count != d for a in alternatives):
                alternatives.append(at(d))
            alternatives.append(at(c.loop_count, "main+tail"))

    recommended: LoopCandidate | None
    if loop_count is not None:
        recommended = cands[0]
    elif not needs:
        recommended = next((c for c in cands if c.loop_count == 1), None) or at(1)
    elif why == "slices":
        recommended = next(c for c in cands if c.loop_count == total)
    else:
        # Documents' order, skipping the end points unless nothing in the middle works; a row the
        # planner warns about only when no row shown is free of warnings.
        pool = [c for c in cands if c.loop_count != 1] or list(cands)
        recommended = next((c for c in (*pool, *alternatives, *cands) if clean(c)), None)
        if recommended is None:
            recommended = next((c for c in (*pool, *alternatives) if c.ok), None)
    by_rules = recommended
    by_estimate = next((c for c in cands if priced.best is not None and c.loop_count == loops[priced.best].loop_count),
                       None)
    ranking = "rules"
    decides = ranks_by_estimate(kb) if estimate_decides is None else estimate_decides
    note = ranking_note if estimate is not None else ""
    if decides and estimate is not None:
        if loop_count is not None:
            note = f"loop_count {loop_count} was asked for: the estimate does not choose"
        elif not needs:
            note = "no loop is needed (P6.avoid-loops): the estimate does not choose"
        elif why == "slices":
            note = "one depth slice per iteration (POOL.depth-slices): the estimate does not choose"
        elif by_estimate is None:
            note = "the estimate priced no loop count: the documents' order decides"
        elif by_rules is not None and by_rules is not by_estimate and clean(by_rules) and not clean(by_estimate):
            gain = _gain(estimate, by_rules, by_estimate)
            warned = "; ".join(f.message for f in by_estimate.findings if f.level in ("warn", "error"))
            if gain is not None and gain > 1:
                recommended, ranking = by_estimate, "estimate"
                note = (f"the estimate decides despite a warning on loop_count {by_estimate.loop_count} ({warned}): "
                        f"it expects loop_count {by_rules.loop_count}, which has none, to take {gain:.2f}x its time")
            else:
                note = (f"the documents' order decides: the estimate's pick loop_count {by_estimate.loop_count} has a "
                        f"warning ({warned}) and loop_count {by_rules.loop_count} has none")
        else:
            recommended, ranking = by_estimate, "estimate"
    return LoopPlan(shape, dtype, t, needs, reason, ax, total, auto_tiles(shape, t), cands, recommended,
                    tuple(alternatives), tuple(plan_findings), by_rules, by_estimate, ranking, priced.note,
                    unit, max_chunk, note)


def clean(c: LoopCandidate) -> bool:
    """No warning nor error on the row (info findings are notes)."""
    return not any(f.level in ("warn", "error") for f in c.findings)


def _gain(estimate: LoopCost, clean_pick: LoopCandidate, warned_pick: LoopCandidate) -> float | None:
    """How many times the estimate's (warned) pick's time the clean row is expected to take."""
    a = clean_pick.estimate_us if clean_pick.estimate_us is not None else estimate(clean_pick.loop_count)
    b = warned_pick.estimate_us
    if not a or not b:
        return None
    return float(a / b)


def _at(kb: KnowledgeBase, plan: LoopPlan, count: int, tail: TailStrategy | None = None) -> LoopCandidate:
    """The plan's candidate for `count` (its shape, tile, axis, unit and chunk limit)."""
    return candidate(kb, plan.shape, plan.tile, plan.axis, count, tail, plan.unit, plan.max_chunk)


def smallest_fitting_count(kb: KnowledgeBase, plan: LoopPlan) -> int | None:
    """Past the ladder's top, the smallest loop count whose iterations stay within the tile budget
    (the largest BASIC_BATCH that fits, down to one unit per iteration); None when none does.

    A smaller BASIC_BATCH only shrinks what one iteration holds, so whether it fits is monotone in
    BASIC_BATCH and a bisection finds the largest: a 1.6e9-element elementwise axis has ~1e8
    batches to try, which a scan from the top took minutes over (KernelBench 20 at full size)."""
    top = max((c for c in kb.ladders.loop_order if c <= plan.total), default=1)

    def fits(bb: int) -> bool:
        return _at(kb, plan, ceil_div(plan.total, bb), "main+tail").ok

    lo, hi = 1, ceil_div(plan.total, top) - 1  # every bb here gives a count above the ladder's top
    if hi < lo or not fits(lo):
        return None
    while lo < hi:  # invariant: fits(lo)
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return ceil_div(plan.total, lo)
@cites("O2.loop-log-scale", "P6.loop-tail")
def choose_loop(kb: KnowledgeBase, plan: LoopPlan, requested: int | None = None,
                tail: TailPreference | None = None, why: Why = "auto", note: str = "") -> LoopChoice | None:
    """The loop the kernel runs, or None for no loop.

    A pattern that takes one unit per iteration (`why` "slices") gets exactly that, whatever was
    asked (a finding names the count asked for). Otherwise the user's count wins (1 means no loop);
    else the plan's recommendation when a loop is needed;
    when nothing on the ladder passes, the smallest count past it whose iterations fit (one unit
    per iteration when none does; the finding says so). A count larger than the axis is cut to it.
    When the count leaves a tail and the user asked for a divisor, the nearest dividing count
    replaces it; otherwise the kernel runs full chunks plus one constant-shape tail view
    (P6.loop-tail)."""
    findings: list[Finding] = []
    if requested is not None and requested < 1:
        raise InputError(f"loop count {requested} must be a positive whole number")
    if why == "slices":
        # the pattern takes one unit per iteration (POOL.depth-slices): the count is pinned here, in the
        # loop step, so the Loops step shows the count the kernel runs; a count asked for is named
        if requested is not None and requested != plan.total:
            findings.append(rule_finding(kb, "POOL.depth-slices", f"loop count {requested} asked for; this "
                                         "kernel takes one output slice per iteration, so it runs "
                                         f"{plan.total} block(s)", "info"))
        if plan.total <= 1:
            return None
        cand = _at(kb, plan, plan.total)
        findings.extend(f for f in cand.findings if f.level in ("warn", "error") and f.rule != "P6.loop-tail")
        return LoopChoice(plan.axis, plan.total, plan.shape, why, plan.reason, cand, requested, note,
                          tuple(findings))
    if requested is not None:
        if requested == 1:
            return None
        count = requested
    elif not plan.needs_loop:
        return None
    elif plan.recommended is not None:
        count = plan.recommended.loop_count
    else:
        fits = smallest_fitting_count(kb, plan)
        if fits is not None:
            count = fits
            findings.append(rule_finding(kb, "O2.loop-log-scale", f"no loop count on the ladder keeps every "
                                         f"iteration within the limits: {count}, the smallest count above it that "
                                         f"does, is used", "info"))
        else:
            # not even one unit per iteration fits: the finest loop, and the user is told to shrink
            count = plan.total
            findings.append(rule_finding(kb, "O2.loop-log-scale", f"no loop count keeps every iteration within the "
                                         f"limits: {count} (one iteration per unit) is used; shrink the tile or the "
                                         "work per iteration", "warn"))
    count = max(1, min(count, plan.total))
    cand = _at(kb, plan, count)
    if cand.has_tail and tail == "divisor":
        d = divisor_near(plan.total, count)
        if d is not None and d != count:
            findings.append(rule_finding(kb, "P6.loop-tail", f"loop count {count} leaves a tail of {cand.tail}: "
                                         f"{d} divides {plan.total} exactly and is used instead", "info"))
            count = d
            cand = _at(kb, plan, count)
    if cand.has_tail:
        cand = _at(kb, plan, count, "main+tail")
    findings.extend(f for f in cand.findings if f.level in ("warn", "error") and f.rule != "P6.loop-tail")
    return LoopChoice(plan.axis, plan.total, plan.shape, why, plan.reason, cand, requested, note, tuple(findings))

APPLIES = {"loops.plan": plan_loops, "loops.choice": choose_loop}

CHECKS = {
    "loops.need": loop_need,
    "loops.ladder": candidate,
    "loops.tail": check_tail,
    "loops.outermost": check_outermost,
    "loops.per_iter_tiles": check_per_iter_tiles,
    "loops.matmul_inner": check_chunk,
}
