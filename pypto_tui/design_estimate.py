"""The cost estimate priced for one design: what the Tiles and Loops steps hand their rankings.

`estimate.py` prices a point (tile, loop count) of a tensor; this module knows which point a
candidate really becomes. A tile candidate is priced with the loop the pipeline would plan for
it (the user's count, else the planner's pick for that tile), and not at all when the pattern's
op chain could not hold it in the unified buffer (O1.ub-step-down: the compiler refuses it). A
loop count is priced with the tile the design uses. Shared by the pipeline and the `tile`/`loop`
one-shots, which know the family only when given a task file or --family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pypto_tui.estimate import (
    NO_DECISION,
    Estimator,
    LoopCost,
    Point,
    RankDecision,
    TileCost,
    estimator_for,
    rank_decision,
)
from pypto_tui.kb import KnowledgeBase
from pypto_tui.loops import choose_loop, plan_loops
from pypto_tui.plan import Needs, TileRole
from pypto_tui.shapes import Shape, auto_tiles
from pypto_tui.tiles import role_held_bytes
from pypto_tui.vocabulary import LoopWhy, TailPreference


@dataclass(frozen=True)
class DesignCosts:
    """The pricing functions for one design (None when the family has no fit; `note` says why, or
    which fit prices)."""

    tile: TileCost | None
    loop: LoopCost | None
    note: str
    estimator: Estimator | None = None
    op: str | None = None
    tiles: RankDecision = NO_DECISION   # whether the estimate orders the tiles, and why
    loops: RankDecision = NO_DECISION   # ... and the loop counts


def reduce_axes(kb: KnowledgeBase, role: TileRole, op: str | None) -> tuple[int, ...]:
    """The axes the op reduces over: the pack's reduce_axes for it (ops.toml), else the role's one."""
    data = kb.op_data(op)
    if data.reduce_axes:
        return tuple(a for a in data.reduce_axes if a < len(role.shape))
    return () if role.reduce_dim is None else (role.reduce_dim,)


def loop_cost(kb: KnowledgeBase, est: Estimator, role: TileRole, tile: Shape, axis: int,
              op: str | None = None) -> LoopCost:
    """Price a loop count for `tile` on the role's tensor."""
    itemsize, axes = kb.dtype_bytes(role.dtype), reduce_axes(kb, role, op)

    def cost(count: int) -> float | None:
        return est.us(Point(role.shape, itemsize, axes, tile, axis, count if count > 1 else None))

    return cost


def design_costs(kb: KnowledgeBase, family: str | None, op: str | None, needs: Needs,
                 loop_count: int | None = None, tail: TailPreference | None = None) -> DesignCosts:
    """Pricing for the main tile of `needs` and its loop, or none (with the reason)."""
    est, why = estimator_for(kb, family, op)
    if est is None:
        return DesignCosts(None, None, why)
    role = needs.tiles[0]
    itemsize, axes = kb.dtype_bytes(role.dtype), reduce_axes(kb, role, op)
    axis, loop_why = needs.loop_axis, needs.loop_why

    def tile_cost(tile: Shape) -> float | None:
        if role_held_bytes(kb, tile, role) > kb.chip.ub_bytes:
            return None
        count = planned_count(kb, est, role, tile, axis, loop_why, loop_count, tail, op)
        return est.us(Point(role.shape, itemsize, axes, tile, axis, count))

    elements = math.prod(role.shape)
    return DesignCosts(tile_cost, None, est.describe(), est, op, rank_decision(kb, est.fit, "tiles", elements),
                       rank_decision(kb, est.fit, "loops", elements))


def planned_count(kb: KnowledgeBase, est: Estimator, role: TileRole, tile: Shape, axis: int, why: LoopWhy,
                  requested: int | None, tail: TailPreference | None, op: str | None = None) -> int | None:
    """The loop count the pipeline would plan for `tile` (None: no loop), the pack's ranking
    included, so a tile is priced as the kernel it would become."""
    if requested is None and auto_tiles(role.shape, tile) <= kb.limits.max_auto_tiles and why == "auto":
        return None  # no loop is needed (P6.avoid-loops): the planner's answer, without planning
    # Only a pack that ranks by the estimate lets the price choose the loop; else the documents do.
    decides = rank_decision(kb, est.fit, "loops", math.prod(role.shape)).estimate_decides
    price = loop_cost(kb, est, role, tile, axis, op) if decides else None
    plan = plan_loops(kb, role.shape, role.dtype, tile, axis, requested, why, price, estimate_decides=decides)
    choice = choose_loop(kb, plan, requested, tail, why)
    return choice.count if choice is not None else None
