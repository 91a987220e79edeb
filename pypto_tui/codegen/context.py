"""What a pattern reads while it writes a kernel: the frozen KernelPlan, seen through a few
shorthands (the contract, the dimension plan, the main tile, the loop count, the signature).

Nothing here computes: the tiles, the cube tiles and the loop were decided by the tile and loop
steps and frozen into the plan by the pipeline.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract, Signature
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import Flavour, KnowledgeBase
    from pypto_tui.plan import Geometry, KernelPlan, LoopChoice, TileChoice


@dataclass(frozen=True)
class GenContext:
    kb: KnowledgeBase
    flavour: Flavour
    plan: KernelPlan
    task: Signature

    @property
    def contract(self) -> Contract:
        return self.plan.contract

    @property
    def dims(self) -> DimPlan:
        return self.plan.dims

    @property
    def geometry(self) -> Geometry | None:
        return self.plan.geometry

    @property
    def task_path(self) -> str | None:
        return self.plan.contract.task_path

    @property
    def main(self) -> TileChoice | None:
        return self.plan.main_tile

    @property
    def tile(self) -> tuple[int, ...] | None:
        """The main tile, as the Tiles step decided it (after any step-down)."""
        return self.plan.main_tile.tile if self.plan.main_tile else None

    @property
    def loop(self) -> LoopChoice | None:
        return self.plan.loop

    @property
    def loop_count(self) -> int | None:
        return self.plan.loop.count if self.plan.loop else None

    @property
    def out_param(self) -> bool:
        return self.flavour.out_param

    @property
    def dtype(self) -> str:
        return self.geometry.dtype if self.geometry else (self.dims.dtype or "fp32")
