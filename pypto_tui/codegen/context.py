"""Everything the generator reads from a design, gathered once from the Pipeline.

The generator never reaches into the earlier steps' internals: it asks the Pipeline for the
contract, the dimension plan, the geometry, the chosen tile and its evaluation, the loop plan and
the chosen loop count, and takes the cube tiles and the loop-tail preference from the design.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pypto_tui.codegen.spec import Unsupported
from pypto_tui.errors import InputError

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract, Signature
    from pypto_tui.design import Geometry, Pipeline
    from pypto_tui.dims import DimPlan
    from pypto_tui.kb import Flavour, KnowledgeBase
    from pypto_tui.loops import LoopPlan
    from pypto_tui.tiles import TileEvaluation


@dataclass
class GenContext:
    kb: KnowledgeBase
    flavour: Flavour
    contract: Contract
    dims: DimPlan
    geometry: Geometry | None
    tile: tuple[int, ...] | None
    tile_eval: TileEvaluation | None
    loop_plan: LoopPlan | None
    loop_count: int | None
    loop_tail: str | None
    cube: dict[str, list[int]] | None
    task: Signature
    task_path: str | None
    tile_is_users: bool = False

    @property
    def out_param(self) -> bool:
        return self.flavour.out_param

    @property
    def dtype(self) -> str:
        return self.geometry.dtype if self.geometry else (self.dims.dtype or "fp32")


def context_of(pipeline: Pipeline) -> GenContext:
    """Collect the design's steps. Raises Unsupported when a step cannot give what codegen needs."""
    kb = pipeline.kb
    d = pipeline.design
    flavour = kb.flavour(d.flavour)
    c = pipeline.contract()
    if not c.supported:
        raise Unsupported(c.reason or f"the contract marks {c.family}/{c.op} as unsupported")
    if c.unknown:
        fields = ", ".join(sorted(c.unknown))
        raise Unsupported(f"the contract has unknown fields ({fields}): fill them in before generating a kernel")
    dims = pipeline.dims()
    if dims.strategy is None or not dims.kernel_shapes:
        why = "; ".join(f.message for f in dims.findings if f.level in ("warn", "error")) or "no strategy applies"
        raise Unsupported(f"the dimension plan has no kernel layout: {why}")
    try:
        geometry = pipeline.geometry()
        tile = pipeline.chosen_tile()
        tile_eval = pipeline.tile_evaluation()
        loop_plan = pipeline.loop_plan()
        loop_count = pipeline.chosen_loop_count()
    except InputError as exc:
        raise Unsupported(f"the tile/loop steps cannot be computed: {exc}") from None
    task_path = c.task_path or d.task
    if c.signature is None:
        raise Unsupported("the contract does not record Model's signature: re-open the task file")
    task = c.signature
    return GenContext(
        kb=kb, flavour=flavour, contract=c, dims=dims, geometry=geometry, tile=tile, tile_eval=tile_eval,
        loop_plan=loop_plan, loop_count=loop_count, loop_tail=d.loop_tail, cube=d.cube, task=task,
        task_path=task_path, tile_is_users=bool(d.tile),
    )
