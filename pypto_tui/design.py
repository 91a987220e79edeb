"""The design document: what the user decided at each step, and the pure pipeline over it.

One idea carries the product: a kernel design is a document built step by step, and every step is
a pure function of the document so far and the knowledge base. `Design` holds only decisions
(task file, pack, edits to the contract, the chosen strategy, tile, loop count, cube tiles);
`Pipeline` computes everything else from it and caches each step by its inputs, so the app can
recompute on every keystroke and tell which later steps went stale.

libcst (for the contract) and the code generator are imported only when a step needs them.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pypto_tui.errors import InputError
from pypto_tui.fileio import write_atomic  # re-exported: scaffold, export and the app write through it
from pypto_tui.kb import KnowledgeBase

if TYPE_CHECKING:
    from pypto_tui.contract.model import Contract
    from pypto_tui.dims import DimPlan
    from pypto_tui.loops import LoopPlan
    from pypto_tui.tiles import TileEvaluation, TilePlan

STEPS = ("contract", "dims", "tiles", "loops", "kernel")
DESIGN_VERSION = 1


@dataclass
class Design:
    """Decisions only; everything derivable is recomputed by the Pipeline."""

    task: str | None = None
    kb: str | None = None
    flavour: str | None = None
    contract_edits: dict[str, Any] = field(default_factory=dict)
    strategy: str | None = None
    tile: list[int] | None = None
    loop_count: int | None = None
    loop_tail: str | None = None
    cube: dict[str, list[int]] | None = None
    step: str = "contract"
    version: int = DESIGN_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Design:
        if not isinstance(data, dict):
            raise InputError("a design file holds one JSON object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise InputError(f"design file has unknown field(s) {', '.join(unknown)}: is it a pypto-tui session?")
        version = data.get("version", DESIGN_VERSION)
        if version != DESIGN_VERSION:
            raise InputError(f"design file version {version}: this pypto-tui reads version {DESIGN_VERSION}")
        d = cls(**data)
        if d.step not in STEPS:
            d.step = "contract"
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Design:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"session file {p} does not exist") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"session file {p} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
        return cls.from_dict(data)

    def save(self, path: str | os.PathLike[str]) -> Path:
        return write_atomic(Path(path), self.to_json(), force=True)


@dataclass(frozen=True)
class Geometry:
    """The kernel's main tensor as the tile and loop steps see it."""

    shape: tuple[int, ...]
    dtype: str
    reduce_dim: int | None
    why: str  # "auto" | "matmul" | "reduce"
    matmul: tuple[int, int, int] | None = None  # (M, K, N)


def geometry_of(contract: Contract, dims: DimPlan) -> Geometry:
    """Which tensor the tile applies to: the first kernel input (the output for a matmul)."""
    tensors = [i for i in contract.inputs if i.kind == "tensor"]
    dtype = (tensors[0].dtype if tensors and tensors[0].dtype else "fp32")
    if contract.family == "matmul":
        shapes = dims.kernel_shapes
        out = tuple(dims.output_kernel_shape or ())
        if len(shapes) >= 2 and shapes[0] and shapes[1] and len(out) >= 2:
            M, N = out[-2], out[-1]
            K = shapes[0][-1]
            return Geometry(out, dtype, None, "matmul" if len(out) == 2 else "auto", (M, K, N))
    if not dims.kernel_shapes or dims.kernel_shapes[0] is None:
        raise InputError("the dimension plan has no kernel shape: fill the contract's unknown shapes first")
    shape = tuple(dims.kernel_shapes[0])
    why = "reduce" if (contract.family in ("loss", "norm") and len(shape) == 1) else "auto"
    return Geometry(shape, dtype, dims.reduce_axis, why)


def task_geometry(task: str | os.PathLike[str], kb: KnowledgeBase) -> Geometry:
    """Shape, dtype and reduce axis of a task file's kernel, read statically."""
    p = Pipeline(kb, Design(task=str(task)))
    return p.geometry()


class Pipeline:
    """Computes each step from the design, caching by the step's inputs.

    The cache key of a step is the part of the design it depends on, so editing the tile leaves
    the contract and dimension plan untouched and only the tile, loop and kernel steps recompute.
    """

    def __init__(self, kb: KnowledgeBase, design: Design) -> None:
        self.kb = kb
        self.design = design
        self._cache: dict[str, tuple[Any, Any]] = {}

    def _memo(self, step: str, key: Any, compute: Any) -> Any:
        hit = self._cache.get(step)
        if hit is not None and hit[0] == key:
            return hit[1]
        value = compute()
        self._cache[step] = (key, value)
        return value

    # -- step 1
    def contract(self) -> Contract:
        d = self.design
        if not d.task:
            raise InputError("no task file: open one (or pick a bundled example)")

        def compute() -> Contract:
            from pypto_tui.contract.extract import extract_contract

            c = extract_contract(Path(d.task), self.kb)  # type: ignore[arg-type]
            return c.with_edits(d.contract_edits) if d.contract_edits else c

        key = (d.task, _mtime(d.task), json.dumps(d.contract_edits, sort_keys=True, default=str))
        return self._memo("contract", key, compute)  # type: ignore[no-any-return]

    # -- step 2
    def dims(self) -> DimPlan:
        from pypto_tui.dims import plan_dims

        c = self.contract()
        return self._memo("dims", (id(c), self.design.strategy),  # type: ignore[no-any-return]
                          lambda: plan_dims(c, self.kb, self.design.strategy))

    def geometry(self) -> Geometry:
        return geometry_of(self.contract(), self.dims())

    # -- step 3
    def tile_plan(self, top: int = 20) -> TilePlan:
        from pypto_tui.tiles import rank_candidates

        g = self.geometry()
        return self._memo("tile_plan", (g, top),  # type: ignore[no-any-return]
                          lambda: rank_candidates(self.kb, g.shape, g.dtype, g.reduce_dim, top=top))

    def chosen_tile(self) -> tuple[int, ...] | None:
        if self.design.tile:
            return tuple(self.design.tile)
        rec = self.tile_plan().recommended
        return rec.tile if rec else None

    def tile_evaluation(self) -> TileEvaluation | None:
        from pypto_tui.tiles import evaluate_tile

        tile = self.chosen_tile()
        if tile is None:
            return None
        g = self.geometry()
        return evaluate_tile(self.kb, g.shape, g.dtype, tile, g.reduce_dim)

    # -- step 4
    def loop_plan(self) -> LoopPlan | None:
        from pypto_tui.loops import plan_loops

        tile = self.chosen_tile()
        if tile is None:
            return None
        g = self.geometry()
        key = (g, tile, self.design.loop_count)
        return self._memo("loop_plan", key,  # type: ignore[no-any-return]
                          lambda: plan_loops(self.kb, g.shape, g.dtype, tile, 0, self.design.loop_count,
                                             g.why))  # type: ignore[arg-type]

    def chosen_loop_count(self) -> int | None:
        """The loop count the kernel uses: the user's explicit choice (1 means no loop), else the
        planner's recommendation when a loop is needed, else None (no loop)."""
        if self.design.loop_count:
            return self.design.loop_count if self.design.loop_count > 1 else None
        plan = self.loop_plan()
        if plan is None or not plan.needs_loop:
            return None
        return plan.recommended.loop_count if plan.recommended else None


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def kernel_of(pipeline: Pipeline) -> Any:
    """Step 5: the generated module for the design (see pypto_tui.codegen.generate)."""
    from pypto_tui.codegen import generate

    d = pipeline.design
    try:
        key = (id(pipeline.contract()), pipeline.chosen_tile(), pipeline.chosen_loop_count(), d.flavour,
               json.dumps(d.cube, sort_keys=True), d.loop_tail, d.strategy)
    except InputError:
        # No kernel layout (an unsupported contract): the generator itself says why.
        return generate(pipeline)
    return pipeline._memo("kernel", key, lambda: generate(pipeline))
