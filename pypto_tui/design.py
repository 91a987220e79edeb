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
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from pypto_tui.errors import InputError
from pypto_tui.fileio import write_atomic
from pypto_tui.kb import KnowledgeBase
from pypto_tui.plan import (
    FREE_VIEW_STEPS,
    CubeChoice,
    DynamicAxis,
    Geometry,
    KernelPlan,
    LoopChoice,
    Needs,
    TileChoice,
    geometry_of,
)
from pypto_tui.shapes import fmt_dims
from pypto_tui.vocabulary import TAIL_PREFERENCES, TailPreference

if TYPE_CHECKING:
    from pypto_tui.codegen.compose import ForwardView
    from pypto_tui.codegen.pattern import Pattern
    from pypto_tui.codegen.result import GeneratedKernel
    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.contract.model import Contract
    from pypto_tui.design_estimate import DesignCosts
    from pypto_tui.dims import DimPlan
    from pypto_tui.loops import LoopPlan
    from pypto_tui.plan import ModulePlan
    from pypto_tui.tiles import TilePlan

T = TypeVar("T")

STEPS = ("contract", "dims", "tiles", "loops", "kernel")
DESIGN_VERSION = 1


FRONT_ENDS = ("static", "traced")
"""How step 1 reads a task: statically (libcst, the task never runs) or traced (torch.export, in the task runner)."""


def check_front_end(name: str) -> str:
    """`name` when it is a front end; InputError (one line) otherwise."""
    if name not in FRONT_ENDS:
        raise InputError(f"--front-end is {' or '.join(FRONT_ENDS)}, not {name!r}")
    return name


KERNEL_DECISIONS = ("strategy", "tile", "loop_count", "loop_tail", "cube")
"""The decisions each kernel of a chain takes for itself (the Dimensions, Tiles and Loops steps')."""


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
    loop_tail: TailPreference | None = None
    cube: dict[str, list[int]] | None = None
    # An axis of the first tensor input made pypto.DYNAMIC; None follows the task's DYNAMIC_AXIS,
    # -1 keeps every axis static even when the task declares one.
    dynamic_axis: int | None = None
    step: str = "contract"
    version: int = DESIGN_VERSION
    # A chain the planner splits into kernels: which kernel the Dimensions, Tiles and Loops steps
    # show, and each kernel's own decisions ({"1": {"tile": [...], "loop_count": 4}}; the fields
    # above hold a single-kernel task's).
    kernel: int = 0
    kernels: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Where step 1's operator graph comes from: "static" reads forward with libcst and never runs it;
    # "traced" runs the Model through torch.export in the task runner (trace.tracer.traced_graph). Every
    # later step, every command and the app read the graph from the contract, so this is the one place
    # the front end is decided.
    front_end: str = "static"

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
        if isinstance(d.task, str) and "\0" in d.task:  # the system calls refuse such a path with ValueError
            raise InputError("design file: the task path contains a NUL byte, which no file name has: "
                             "open the task file again (pypto-tui ui TASK)")
        if d.step not in STEPS:
            d.step = "contract"
        if d.dynamic_axis is not None and (isinstance(d.dynamic_axis, bool) or not isinstance(d.dynamic_axis, int)
                                           or d.dynamic_axis < -1):
            raise InputError(f"design file: dynamic_axis must be an axis number, -1 or null, got {d.dynamic_axis!r}")
        if isinstance(d.kernel, bool) or not isinstance(d.kernel, int) or d.kernel < 0:
            raise InputError(f"design file: kernel must be a kernel number >= 0, got {d.kernel!r}")
        if not isinstance(d.kernels, dict) or not all(
                isinstance(k, str) and k.isdigit() and isinstance(v, dict) and set(v) <= set(KERNEL_DECISIONS)
                for k, v in d.kernels.items()):
            raise InputError("design file: kernels must map kernel numbers to their decisions "
                             f"({', '.join(KERNEL_DECISIONS)})")
        if d.front_end not in FRONT_ENDS:
            raise InputError(f"design file: front_end must be one of {', '.join(FRONT_ENDS)}, got {d.front_end!r}")
        if d.loop_tail not in (None, *TAIL_PREFERENCES):
            raise InputError(f"design file: loop_tail must be one of {', '.join(TAIL_PREFERENCES)}, "
                             f"got {d.loop_tail!r}")
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


def task_geometry(task: str | os.PathLike[str], kb: KnowledgeBase) -> Geometry:
    """Shape, dtype and reduce axis of a task file's kernel, read statically."""
    p = Pipeline(kb, Design(task=str(task)))
    return p.geometry()


_SHARED_STEPS: OrderedDict[tuple[str, int, Any], tuple[KnowledgeBase, Any]] = OrderedDict()
_SHARED_LIMIT = 4096


def _shared_step(step: str, kb: KnowledgeBase, key: Any, compute: Callable[[], T]) -> T:
    """A step's result shared by every pipeline of this process that asks it with the same pack and key
    (the step must be a pure function of them). The pack is held beside its result, so its id is not
    reused while the entry lives; the least recently used entry goes past the limit."""
    full = (step, id(kb), key)
    hit = _SHARED_STEPS.get(full)
    if hit is not None and hit[0] is kb:
        _SHARED_STEPS.move_to_end(full)
        return cast(T, hit[1])
    value = compute()
    _SHARED_STEPS[full] = (kb, value)
    if len(_SHARED_STEPS) > _SHARED_LIMIT:
        _SHARED_STEPS.popitem(last=False)
    return value


class Pipeline:
    """Computes each step from the design, caching by the step's inputs.

    The cache key of a step is the part of the design it depends on, so editing the tile leaves
    the contract and dimension plan untouched and only the tile, loop and kernel steps recompute.
    The pattern that will write the kernel is asked, before the tile step, what it needs decided
    (its tiles, the matmul for the cube, the loop axis); every later step decides exactly that,
    and `kernel_plan` freezes the decisions for code generation.
    """

    def __init__(self, kb: KnowledgeBase, design: Design, *, fuse: bool = True) -> None:
        self.kb = kb
        self.design = design
        self.fuse = fuse  # False: a chain's every operator is a kernel of its own (the unfused plan)
        self._cache: dict[str, tuple[Any, Any]] = {}

    def with_design(self, **changes: Any) -> Pipeline:
        """The same design with some decisions changed (a tile, a loop count), as a fresh pipeline."""
        return Pipeline(self.kb, replace(self.design, **changes), fuse=self.fuse)

    def unfused(self) -> Pipeline:
        """The same task planned with no fusion rule: every operator of a chain is a kernel of its
        own, writing its intermediate to global memory for the next (what fusion is priced against)."""
        return Pipeline(self.kb, self.design, fuse=False)

    def _memo(self, step: str, key: Any, compute: Callable[[], T]) -> T:
        hit = self._cache.get(step)
        if hit is not None and hit[0] == key:
            return cast(T, hit[1])
        value = compute()
        self._cache[step] = (key, value)
        return value

    # -- step 1
    def contract(self) -> Contract:
        d = self.design
        task = d.task
        if not task:
            raise InputError("no task file: open one (or pick a bundled example)")

        def compute() -> Contract:
            from pypto_tui.contract.edits import apply_edits
            from pypto_tui.contract.extract import extract_contract

            c = extract_contract(Path(task), self.kb)
            c = apply_edits(c, d.contract_edits) if d.contract_edits else c
            if d.front_end == "traced":
                c = self._traced(c, task)
            return c

        key = (task, _mtime(task), json.dumps(d.contract_edits, sort_keys=True, default=str), d.front_end)
        return self._memo("contract", key, compute)

    def _traced(self, c: Contract, task: str) -> Contract:
        """The contract with the traced graph in place of the static one: the static reading still gives
        the inputs, init parameters and the one-operator answer; the kernels come from the graph. A task
        the static reader reads as one operator keeps that answer (so its module is the static one)."""
        from pypto_tui.contract.model import freeze
        from pypto_tui.trace.tracer import traced_graph

        graph = traced_graph(task, self.kb)
        c = replace(c, graph=freeze(graph.to_data()))
        return c if c.supported else traced_reasons(c, graph.problems, self.kb)

    # -- step 2
    def dims(self) -> DimPlan:
        from pypto_tui.dims import plan_dims

        c = self.contract()
        return self._memo("dims", (id(c), self.design.strategy), lambda: plan_dims(c, self.kb, self.design.strategy))

    def geometry(self) -> Geometry:
        return geometry_of(self.contract(), self.dims())

    def pattern(self) -> Pattern | None:
        """The pattern that will write the kernel (None when no pattern covers the contract)."""
        from pypto_tui.codegen.patterns import find

        c = self.contract()
        return self._memo("pattern", id(c), lambda: find(c))

    def needs(self) -> Needs:
        """What the kernel's pattern asks the tile and loop steps to decide."""
        from pypto_tui.codegen.pattern import main_tile_needs

        c, dims, g = self.contract(), self.dims(), self.geometry()
        pattern = self.pattern()

        def compute() -> Needs:
            needs = (pattern.needs if pattern is not None else main_tile_needs)(c, dims, g, self.kb)
            return self._epilogue_needs(needs)

        return self._memo("needs", (id(c), id(dims), g, pattern), compute)

    def _epilogue_needs(self, needs: Needs) -> Needs:
        """A matmul epilogue's tile role (TileRole.cube_n): its last axis cut to the cube's N tile, the
        loop still planned on the whole output. Measured (fusion.toml FUSE.matmul-separate): a vec tile
        spanning several cube N tiles lost the Pass_04/14/17 rows; one of the cube's N kept them."""
        from dataclasses import replace as _replace

        from pypto_tui.tiles import choose_cube

        if not needs.tiles or not needs.tiles[0].cube_n or needs.cube is None:
            return needs
        role = needs.tiles[0]
        M, K, N = needs.cube
        cube = choose_cube(self.kb, M, K, N, needs.cube_dtype or role.dtype, self.design.cube, needs.cube_batch)
        if cube is None:
            return needs
        n_tile = min(role.shape[-1], int(cube.evaluation.n[0]))
        role = _replace(role, shape=(*role.shape[:-1], n_tile))
        return _replace(needs, tiles=(role, *needs.tiles[1:]), loop_shape=needs.loop_shape or needs.tiles[0].shape)

    def costs(self) -> DesignCosts:
        """The cost estimate's pricing of this design's tiles and loop counts (SIM.cost-estimate)."""
        from pypto_tui.design_estimate import design_costs

        c, needs, d = self.contract(), self.needs(), self.design
        return self._memo("costs", (id(c), needs, d.loop_count, d.loop_tail), lambda: design_costs(
            self.kb, c.family, c.op, needs, d.loop_count, d.loop_tail))

    # -- step 3
    def tile_plan(self, top: int | None = 20) -> TilePlan:
        """The ranked candidates for the main tile (the one the Tiles step edits), each qualified
        one priced by the cost estimate when the family has one."""
        from pypto_tui.tiles import rank_candidates

        c, needs, d = self.contract(), self.needs(), self.design
        role = needs.tiles[0]
        costs = self.costs()
        key = (role, top, d.loop_count, d.loop_tail, costs.note)
        # the ranking is a function of the pack, the pattern's needs and these decisions: the same kernel
        # repeated in a model (DenseNet's layers of one block) is ranked once per process
        shared = (c.family, c.op, needs, top, d.loop_count, d.loop_tail)
        return self._memo("tile_plan", key, lambda: _shared_step("tile_plan", self.kb, shared, lambda: rank_candidates(
            self.kb, role.shape, role.dtype, role.reduce_dim, top=top, reducing=role.reducing,
            estimate=costs.tile, estimate_note=costs.note, estimate_decides=costs.tiles.estimate_decides,
            ranking_note=costs.tiles.why)))

    def tile_choices(self) -> tuple[TileChoice, ...]:
        """Every role's tile, as the kernel will use it (the main one is the user's when set)."""
        from pypto_tui.tiles import choose_tile

        roles = self.needs().tiles
        user = tuple(self.design.tile) if self.design.tile else None

        def compute() -> tuple[TileChoice, ...]:
            out: list[TileChoice] = []
            for i, role in enumerate(roles):
                if i == 0:
                    choice = choose_tile(self.kb, role, user, None if user else self.tile_plan(),
                                         loop_axis=self.needs().loop_axis)
                else:
                    choice = choose_tile(self.kb, role)
                if choice is None:
                    raise InputError(f"no legal tile for {role.name} {fmt_dims(role.shape)} {role.dtype}: "
                                     "see the Tiles step's notes")
                out.append(choice)
            return tuple(out)

        return self._memo("tile_choices", (roles, user), compute)

    def chosen_tile(self) -> tuple[int, ...] | None:
        """The main tile the kernel uses (after any step-down the tile step made)."""
        try:
            return self.tile_choices()[0].tile
        except InputError:
            if self.design.tile:
                raise
            return None

    def cube_choice(self) -> CubeChoice | None:
        """The cube tiles of the plan's matmul (None when the pattern has no matmul or none is legal)."""
        from pypto_tui.tiles import choose_cube

        needs = self.needs()
        if needs.cube is None:
            return None
        M, K, N = needs.cube
        dtype = needs.cube_dtype or needs.tiles[0].dtype
        cube = self.design.cube
        return self._memo("cube", (needs.cube, needs.cube_batch, dtype, json.dumps(cube, sort_keys=True)),
                          lambda: choose_cube(self.kb, M, K, N, dtype, cube, needs.cube_batch))

    def more_cube_choices(self) -> tuple[tuple[str, CubeChoice | None], ...]:
        """Cube tiles for the pattern's further matmuls (each the best legal candidate for its
        M x K x N; the design's cube setting is for the main matmul)."""
        from pypto_tui.tiles import choose_cube

        needs = self.needs()
        dtype = needs.cube_dtype or needs.tiles[0].dtype
        return self._memo("more_cubes", (needs.more_cubes, dtype), lambda: tuple(
            (role, choose_cube(self.kb, M, K, N, own or dtype)) for role, (M, K, N), own in needs.more_cubes))

    # -- step 4
    def loop_plan(self) -> LoopPlan | None:
        """Loop-count candidates along the pattern's loop axis, for the final main tile."""
        from pypto_tui.loops import plan_loops

        tile = self.chosen_tile()
        if tile is None:
            return None
        needs = self.needs()
        role = needs.tiles[0]
        shape = needs.loop_shape or role.shape
        costs = self.costs()
        price = None
        if costs.estimator is not None:
            from pypto_tui.design_estimate import loop_cost

            price = loop_cost(self.kb, costs.estimator, role, tile, needs.loop_axis, costs.op)
        key = (shape, role.dtype, tile, needs.loop_axis, needs.loop_why, self.design.loop_count, costs.note,
               needs.loop_unit, needs.loop_max_chunk)
        return self._memo("loop_plan", key, lambda: plan_loops(
            self.kb, shape, role.dtype, tile, needs.loop_axis, self.design.loop_count, needs.loop_why,
            price, costs.note, needs.loop_unit, needs.loop_max_chunk, costs.loops.estimate_decides, costs.loops.why))

    def loop_choice(self) -> LoopChoice | None:
        """The loop the kernel runs (None: no loop)."""
        from pypto_tui.loops import choose_loop

        plan = self.loop_plan()
        if plan is None:
            return None
        d = self.design
        tail = d.loop_tail
        needs = self.needs()
        return self._memo("loop_choice", (plan, d.loop_count, tail), lambda: choose_loop(
            self.kb, plan, d.loop_count, tail, needs.loop_why, needs.loop_note))

    def chosen_loop_count(self) -> int | None:
        """The loop count the kernel uses: the user's explicit choice (1 means no loop), else the
        planner's recommendation when a loop is needed, else None (no loop)."""
        choice = self.loop_choice()
        return choice.count if choice is not None else None

    # -- the plan step 5 renders
    def kernel_plan(self) -> KernelPlan:
        """Every decision, frozen. When no kernel can be written, `blocked` says why."""
        c, dims = self.contract(), self.dims()
        flavour = self.kb.flavour(self.design.flavour).name
        pattern = self.pattern()
        blocked = _blocked(c, dims, pattern)
        base = KernelPlan(c, dims, pattern.id if pattern else "", flavour, c.signature, blocked=blocked)
        if blocked:
            return base
        try:
            tiles = self.tile_choices()
            cube = self.cube_choice()
            loop = self.loop_choice()
            geometry = self.geometry()
        except InputError as exc:
            return replace(base, blocked=f"the tile/loop steps cannot be computed: {exc}")
        needs = self.needs()
        if needs.cube is not None and cube is None:
            M, K, N = needs.cube
            return replace(base, blocked=f"no legal cube tiles for M={M}, K={K}, N={N} {needs.tiles[0].dtype}")
        more = self.more_cube_choices()
        for (role, choice), (_, (M, K, N), own) in zip(more, needs.more_cubes, strict=True):
            if choice is None:
                return replace(base, blocked=f"no legal cube tiles for the {role} matmul, M={M}, K={K}, N={N} "
                                             f"{own or needs.cube_dtype or needs.tiles[0].dtype}")
        decided = tuple((role, choice) for role, choice in more if choice is not None)
        try:
            dynamic, loop = self._dynamic(c, dims, loop, needs, tiles)
        except _NoDynamic as exc:
            return replace(base, blocked=str(exc))
        key = (c, dims, pattern, flavour, tiles, cube, loop, decided, dynamic)
        return self._memo("kernel_plan", key, lambda: replace(base, geometry=geometry, tiles=tiles, cube=cube,
                                                               loop=loop, more_cubes=decided, dynamic=dynamic))

    def _dynamic(self, c: Contract, dims: DimPlan, loop: LoopChoice | None, needs: Needs,
                 tiles: tuple[TileChoice, ...]) -> tuple[DynamicAxis | None, LoopChoice | None]:
        """The dynamic axis the kernel gets (the design's, else the task's declaration) and the loop
        it runs on: it must be the loop's axis; with no loop planned, one block of the design's size."""
        from pypto_tui.loops import candidate, loop_need

        asked = self.design.dynamic_axis
        if asked == -1 or (asked is None and not c.dynamic_axes):
            return None, loop
        source = "the design (--dynamic-axis)" if asked is not None else "the task's DYNAMIC_AXIS"
        axis = asked if asked is not None else c.dynamic_axes[0]
        first = next((t for t in c.tensor_inputs if t.shape is not None), None)
        rank = len(first.shape or ()) if first is not None else 0
        if not 0 <= axis < rank:
            raise _NoDynamic(f"dynamic axis {axis} is not an axis of the first input (use 0..{rank - 1})")
        kernel_axis = next((k for k, group in enumerate(dims.axis_map) if axis in group), None)
        if kernel_axis is None or kernel_axis != needs.loop_axis:
            raise _NoDynamic(f"dynamic axis {axis} becomes kernel axis {kernel_axis}, but this pattern loops along "
                             f"axis {needs.loop_axis}: a dynamic axis must be the one the kernel loops over")
        if loop is None:
            role = tiles[0].role
            shape = needs.loop_shape or role.shape
            why = needs.loop_why
            reason = loop_need(self.kb, shape, tiles[0].tile, why)[1]
            cand = candidate(self.kb, shape, tiles[0].tile, kernel_axis, 1)
            loop = LoopChoice(kernel_axis, shape[kernel_axis], shape, why, reason, cand, 1,
                              "one block of the design's size; a larger run-time size takes more")
        return DynamicAxis(kernel_axis, axis, loop.candidate.basic_batch, source), loop


class _NoDynamic(Exception):
    """The dynamic axis asked for cannot be given to this kernel (the message says why)."""


def _blocked(c: Contract, dims: DimPlan, pattern: Pattern | None) -> str:
    """Why no kernel can be written for this contract and dimension plan ("" when one can)."""
    if not c.supported:
        return c.reason or f"the contract marks {c.family}/{c.op} as unsupported"
    if c.unknown:
        fields = sorted(c.unknown)
        first = c.unknown[fields[0]]  # the reader's reason, so the user sees what to change
        return (f"the contract has unknown fields ({', '.join(fields)}: {first}): fill them in before generating a "
                "kernel")
    if dims.strategy is None or not dims.kernel_shapes:
        why = "; ".join(f.message for f in dims.findings if f.level in ("warn", "error")) or "no strategy applies"
        return f"the dimension plan has no kernel layout: {why}"
    if pattern is None:
        from pypto_tui.codegen.patterns import reason_for

        return reason_for(c)
    return ""


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0


def kernel_of(pipeline: Pipeline) -> GeneratedKernel:
    """Step 5: the generated module for the design's frozen plan (see pypto_tui.codegen.generate).
    A task the level-1 path cannot write whose graph is several kernels gets a module of them
    (`module_kernel`); a level-1 task keeps its one kernel, exactly as before."""
    from pypto_tui.codegen import generate

    plan = pipeline.kernel_plan()
    stage = isinstance(pipeline, _StagePipeline)  # composed from its tree: its own text only when read
    single = pipeline._memo("kernel", plan, lambda: generate(plan, pipeline.kb, text=not stage))
    if pipeline.contract().supported and split_by_graph(pipeline) is None:
        return single  # a task the level-1 reader takes keeps the level-1 answer, refusals included
    module = pipeline._memo("module_kernel", (plan, _kernel_decisions(pipeline)), lambda: module_kernel(pipeline))
    if module is not None:
        return module
    if not single.supported:
        reason = static_refusal(pipeline, single.reason)
        if reason != single.reason:
            return pipeline._memo("refusal", (plan, reason), lambda: replace(single, reason=reason))
    return single


class _StagePipeline(Pipeline):
    """A pipeline over one kernel of a module plan: its contract is given, not read from a file."""

    def __init__(self, kb: KnowledgeBase, contract: Contract, flavour: str | None) -> None:
        super().__init__(kb, Design(task="<kernel of a module>", flavour=flavour))
        self._given = contract

    def contract(self) -> Contract:
        """The given contract, with the design's edits applied: verifying a kernel on its own runs it
        at test shapes given as edits (sim/verify_shapes.with_shapes), as a task file's contract takes them."""
        edits = self.design.contract_edits
        if not edits:
            return self._given

        def compute() -> Contract:
            from pypto_tui.contract.edits import apply_edits

            return apply_edits(self._given, edits)

        return self._memo("contract", json.dumps(edits, sort_keys=True, default=str), compute)

    def with_design(self, **changes: Any) -> _StagePipeline:
        """The same kernel (its given contract) with some decisions changed."""
        other = _StagePipeline(self.kb, self._given, self.design.flavour)
        other.design = replace(other.design, **changes)
        return other


def module_plan_of(pipeline: Pipeline) -> tuple[OpGraph, ModulePlan] | None:
    """The task's graph split into kernels (plan.partition with the pack's fusion rules, or none for an
    unfused pipeline), or None when the graph is one kernel or absent."""
    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.plan import decompose, partition

    c = pipeline.contract()
    if c.graph is None:
        return None
    graph = decompose(OpGraph.from_data(c.graph))
    unread = not c.supported and c.family == "unknown"  # the task's reader saw no operator: the graph's decides
    several = len(graph.results) > 1  # forward returns a tuple: one kernel's output each
    if graph.problems or graph.output is None or not graph.ops or (len(graph.ops) < 2 and not unread and not several):
        return None
    rules = pipeline.kb.fusion if pipeline.fuse else ()
    mp = partition(graph, rules)
    # one group is a module too when its anchor took an epilogue (a GEMM with its bias and activation,
    # FUSE.matmul-separate): the task's own reader sees a fused expression, the group's a matmul contract;
    # and when the task's reader could not read it as one operator (an nn.LSTM, a module the trace ran)
    fused = len(mp.groups) == 1 and mp.groups[0].anchor is not None and any(
        n is not None and n.role == "elementwise" for n in (graph.node(i) for i in mp.groups[0].nodes))
    return (graph, mp) if len(mp.groups) > 1 or fused or unread or several else None


@dataclass(frozen=True)
class Stage:
    """One kernel of a module plan: the operators it runs, the task-like pipeline that designed it
    (its own dimensions, tiles and loops), and its generated code."""

    index: int
    ops: str
    pipeline: Pipeline
    kernel: GeneratedKernel
    args: tuple[str, ...]      # forward's expressions for the kernel's inputs, in order
    output: str                # the local name forward gives its result
    modules: tuple[str, ...]   # the task's nn modules the kernel uses (its weights)
    rule: str
    submodule: str = ""        # where in the task's module tree it runs (contract.submodule): "" is Model.forward


@dataclass(frozen=True)
class ModuleStages:
    """A task's module plan designed kernel by kernel, or the reason it cannot be (`refused`)."""

    stages: tuple[Stage, ...] = ()
    prelude: tuple[ForwardView, ...] = ()  # views forward takes before the first kernel
    output: str = ""
    after: tuple[tuple[int, ForwardView], ...] = ()  # views forward takes right after kernel i (of its output)
    refused: str = ""
    outputs: tuple[str, ...] = ()  # the locals forward returns as a tuple (() when it returns `output` alone)
    paths: Mapping[str, str] = field(default_factory=dict)  # OpGraph.paths: a submodule's path in the task


def module_stages(pipeline: Pipeline) -> ModuleStages | None:
    """Every kernel of the task's module plan designed as a task of its own (its contract from its group
    of the graph, contract/group.py, then the level-1 steps). None when the graph is one kernel."""
    key = (pipeline.kernel_plan(), _kernel_decisions(pipeline), pipeline.fuse)
    return pipeline._memo("module_stages", key, lambda: _module_stages(pipeline))


def _kernel_decisions(pipeline: Pipeline) -> str:
    """The chain's per-kernel decisions as a memo key (the kernel plan does not hold them)."""
    return json.dumps(pipeline.design.kernels, sort_keys=True, default=str)


def _module_stages(pipeline: Pipeline) -> ModuleStages | None:
    from pypto_tui.codegen.compose import ForwardView, ViewStep
    from pypto_tui.contract.group import arg_name, contract_of
    from pypto_tui.contract.submodule import submodule_of
    from pypto_tui.errors import Unsupported
    from pypto_tui.ops import views as V

    planned = module_plan_of(pipeline)
    if planned is None:
        return None
    graph, mp = planned
    c = pipeline.contract()
    param_text = {v.id: f"self.{_task_path(v.id, graph.paths)}" for v in graph.values if v.kind == "param"}
    local: dict[str, str] = {v.id: v.id for v in graph.values if v.kind == "input"}
    nodes = {n.id: n for n in graph.nodes}
    prelude: list[ForwardView] = []
    after: list[tuple[int, ForwardView]] = []
    pending = list(mp.views)

    def take_views(done: int) -> str:
        """Forward's views whose tensor exists once kernel `done` ran (-1: the inputs); "" or why a view
        cannot be taken."""
        for vid in list(pending):
            n = nodes[vid]
            source = n.inputs[0]
            if source not in local and source not in param_text:
                continue  # its kernel has not run yet
            raw = [V.step_of(step) for step in n.attrs.get("steps", ())]
            bad = next((s for s in raw if s.kind not in FREE_VIEW_STEPS), None)
            if bad is not None:
                return f"forward would copy data for the view {n.spelling} ({bad.kind})"
            shape = graph.shape_of(source)
            sizes = V.symbolic_sizes(shape, raw) if shape is not None else [None] * len(raw)
            steps = [ViewStep(s.kind, s.dim, tuple(s.shape), size) for s, size in zip(raw, sizes, strict=True)]
            view = ForwardView(f"v_{vid}", local.get(source) or param_text[source], tuple(steps))
            local[vid] = view.target
            if done < 0:
                prelude.append(view)
            else:
                after.append((done, view))
            pending.remove(vid)
        return ""

    why = take_views(-1)
    if why:
        return ModuleStages(refused=why)
    stages: list[Stage] = []
    for g in mp.groups:
        ops = ", ".join(nodes[n].op for n in g.nodes)
        try:
            stage_contract, reads, modules = contract_of(graph, g, pipeline.kb,
                                                         f"Kernel {g.index} of {c.task_path}: {ops}.")
        except Unsupported as exc:
            return ModuleStages(refused=f"kernel {g.index} ({ops}): {exc}")
        if not stage_contract.supported:
            return ModuleStages(refused=f"kernel {g.index} ({ops}): {stage_contract.reason}")
        stage_pipeline = _StagePipeline(pipeline.kb, stage_contract, pipeline.design.flavour)
        decided = pipeline.design.kernels.get(str(g.index))
        if decided:
            stage_pipeline = stage_pipeline.with_design(**{k: v for k, v in decided.items() if k in KERNEL_DECISIONS})
        try:
            gen = kernel_of(stage_pipeline)
        except InputError as exc:
            return ModuleStages(refused=f"kernel {g.index} ({ops}): {exc}")
        if not gen.supported:
            return ModuleStages(refused=f"kernel {g.index} ({ops}): {gen.reason}")
        args = tuple(local.get(r) or param_text.get(r) or arg_name(r) for r in reads)
        out = f"t_{arg_name(g.writes)}"
        local[g.writes] = out
        stages.append(Stage(g.index, ops, stage_pipeline, gen, args, out, tuple(modules), g.rule or "",
                            submodule_of(graph, g)))
        why = take_views(g.index)
        if why:
            return ModuleStages(refused=why)
    if pending or any(o not in local for o in (mp.output, *mp.outputs)):
        return ModuleStages(refused=f"forward cannot take the view(s) {', '.join(pending)} in order")
    return ModuleStages(tuple(stages), tuple(prelude), local[mp.output], tuple(after), paths=graph.paths,
                        outputs=tuple(local[o] for o in mp.outputs))


def _task_path(vid: str, paths: Mapping[str, str]) -> str:
    """A parameter's path in the task's module tree (`net_2.weight` -> `net.2.weight` for a traced
    nn.Sequential): the composed module reads the task's own parameter there."""
    owner, dot, name = vid.rpartition(".")
    return f"{paths.get(owner, owner)}.{name}" if dot else paths.get(vid, vid)


def module_kernel(pipeline: Pipeline) -> GeneratedKernel | None:
    """A module of several kernels for a task whose graph the plan splits: each kernel is
    designed as a task of its own (`module_stages`), and codegen/compose.py merges them under one
    ModelNew. None when the graph is one kernel (the level-1 answer stands)."""
    designed = module_stages(pipeline)
    return None if designed is None else compose_module(pipeline, designed)


def compose_module(pipeline: Pipeline, designed: ModuleStages) -> GeneratedKernel:
    """One ModelNew that creates the task's parameters as Model does and calls `designed`'s kernels
    in order (verify composes stages given explicit designs through this too)."""
    import libcst as cst

    from pypto_tui.codegen.compose import KernelCall, ModuleWiring, compose
    from pypto_tui.codegen.result import GeneratedKernel
    from pypto_tui.codegen.rewrite import code_of
    from pypto_tui.codegen.templates import find_template
    from pypto_tui.contract.init_body import init_statements, task_support
    from pypto_tui.contract.signature import parameters
    from pypto_tui.errors import Unsupported

    c = pipeline.contract()
    flavour = pipeline.kb.flavour(pipeline.design.flavour).name

    def refused(reason: str) -> GeneratedKernel:
        return GeneratedKernel("", False, reason, "module", flavour)

    if designed.refused:
        return refused(designed.refused)
    sig = c.signature
    source = Path(c.task_path).read_text(encoding="utf-8") if c.task_path else None
    body = init_statements(source) if source else None
    if sig is None or body is None:
        return refused("a module of several kernels needs Model.__init__ from the task file")
    trees = [s.kernel.tree for s in designed.stages]
    if any(not isinstance(t, cst.Module) for t in trees):
        return refused("a kernel of the module has no syntax tree to compose")
    calls = tuple(KernelCall(s.output, s.args, s.modules, tuple(designed.paths.get(m, m) for m in s.modules))
                  for s in designed.stages)
    wiring = ModuleWiring(calls, designed.output, designed.prelude, designed.after, designed.outputs)
    summaries = [f"kernel {s.index}: {s.ops} ({s.kernel.pattern}; {s.rule or 'its own kernel'})"
                 for s in designed.stages]
    plural = "s" if len(trees) != 1 else ""
    doc = f"{len(trees)} kernel{plural} for {Path(c.task_path or 'the task').name}:\n" + "\n".join(summaries)
    try:
        template = find_template(pipeline.kb, flavour, "module_model_new").text
        support = task_support(source or "")
        tree = compose(trees, wiring, doc, template, parameters(sig.init_source), body,
                       parameters(sig.forward_source), support.statements, support.methods, support.attributes)
        code = code_of(tree, tree)
        compile(code, "<generated module>", "exec")  # its kernels' texts were not compiled one by one
    except Unsupported as exc:
        return refused(str(exc))
    except SyntaxError as exc:  # a bug here must not take the app down: report it as the reason
        return refused(f"internal error composing the module (SyntaxError: {exc}); please report it")
    return GeneratedKernel(code, True, "", "module", flavour, summary=doc.replace("\n", "; "), tree=tree)


@dataclass(frozen=True)
class TaskKernel:
    """One kernel of a task as every command shows it: its index, the operators it runs, the fusion
    rule that decided its extent ("" for a one-kernel task), the pipeline that designs it and where in
    the task's module tree it runs (`layer1.0`; "" for Model.forward, contract/submodule.py)."""

    index: int
    ops: str
    rule: str
    pipeline: Pipeline
    submodule: str = ""


@dataclass(frozen=True)
class TaskKernels:
    """A task's kernels and whether a module can be written for it (`reason` says why not). `chain`:
    the graph is several kernels. `contract`, `tile`, `loop`, `scaffold`, the app and `verify` all
    take their verdict and their kernels from here, so they cannot disagree."""

    kernels: tuple[TaskKernel, ...]
    chain: bool
    reason: str = ""

    @property
    def supported(self) -> bool:
        return not self.reason and bool(self.kernels)


def split_by_graph(pipeline: Pipeline) -> ModuleStages | None:
    """One operator the level-1 layout refuses whole, which the graph decomposes into kernels it does
    lay out (a swap of axes that are not neighbours: a chain of neighbouring swaps); None otherwise.
    Decided from the dimension step, so the one-shot commands need no code generation to ask."""
    if not pipeline.contract().supported or pipeline.dims().strategy is not None:
        return None
    try:
        parts = module_stages(pipeline)
    except InputError:
        return None
    if parts is None or parts.refused or len(parts.stages) < 2:
        return None
    return parts


def static_stop(pipeline: Pipeline) -> str:
    """Where the static reader stopped following forward (a loop, an `if`, a submodule it could not read),
    or "" when it followed all of it or the task was traced: the traced front end reads such a model."""
    if pipeline.design.front_end != "static":
        return ""
    problems = list((pipeline.contract().graph or {}).get("problems") or ())
    return str(problems[0]).removeprefix("forward could not be read here: ") if problems else ""


TRACE_HINT = "--front-end traced reads it by running it"
"""What a refusal of the static reader adds when it stopped following forward: the traced front end runs
forward, so the Python it stopped at (a submodule, nn.Sequential, a loop, an `if`) is no obstacle there."""


def static_refusal(pipeline: Pipeline, reason: str) -> str:
    """A task's refusal as every command gives it. Where the static reader stopped following forward,
    that is the cause to name, with the front end that reads such a model: when the root still read as
    one operator (ResNet's final nn.Linear) the root's own complaint would hide where reading stopped."""
    where = static_stop(pipeline)
    if not where:
        return reason
    if pipeline.contract().family != "unknown":
        return f"forward could not be read into an operator graph: {where} ({TRACE_HINT})"
    return f"{reason} ({TRACE_HINT})"


def task_kernels(pipeline: Pipeline) -> TaskKernels:
    """The task's kernels, from its operator graph: one kernel when the whole graph is one operator
    pattern, else the module plan's kernels (each designed from its group of the graph)."""
    c = pipeline.contract()
    if c.supported:
        split = split_by_graph(pipeline)
        if split is not None:
            return TaskKernels(tuple(TaskKernel(s.index, s.ops, s.rule, s.pipeline, s.submodule)
                                     for s in split.stages), True)
        k = kernel_of(pipeline)
        one = TaskKernel(0, c.op or c.family, "", pipeline, task_submodule(c))
        return TaskKernels((one,), False, "" if k.supported else k.reason)
    designed = module_stages(pipeline)
    if designed is None:
        # kernel_of's refusal already names where the static reader stopped: not wrapped twice
        return TaskKernels((), False, static_refusal(pipeline, c.reason) if c.reason else kernel_of(pipeline).reason)
    if designed.refused:
        return TaskKernels((), True, designed.refused)
    k = kernel_of(pipeline)
    kernels = tuple(TaskKernel(s.index, s.ops, s.rule, s.pipeline, s.submodule) for s in designed.stages)
    return TaskKernels(kernels, True, "" if k.supported else k.reason)


def traced_reasons(c: Contract, problems: Sequence[str], kb: KnowledgeBase) -> Contract:
    """A task the static reader does not take as one operator, read through its trace: why its fields are
    unknown is the trace's answer (its first unreadable node, or that it is several kernels), not the
    static reader's, which stopped at Python the trace ran through (nn.Sequential, an `if`). An input the
    trace ran without (a forward parameter left at its default) is no longer asked for."""
    from pypto_tui.contract.checks import with_findings

    why = (f"the traced graph: {problems[0]}" if problems
           else "the traced graph is several kernels, each with its own contract")
    traced = {v["id"] for v in (c.graph or {}).get("values", ()) if v.get("kind") == "input"}
    unknown: dict[str, str] = {}
    for field_name, reason in c.unknown.items():
        if field_name.startswith("inputs"):
            name = field_name.split(".")[1] if "." in field_name else None
            if traced and (name is None or name not in traced):
                continue  # the trace ran forward with get_inputs(): this question is settled
            unknown[field_name] = reason
        else:
            unknown[field_name] = reason if field_name.startswith("init_params") else why
    return with_findings(replace(c, reason=why, unknown=unknown), kb)


def task_submodule(c: Contract) -> str:
    """The submodule of a task that is one kernel: where its whole graph runs ("" without a graph)."""
    from pypto_tui.contract.graph import OpGraph
    from pypto_tui.contract.submodule import submodule_of

    return submodule_of(OpGraph.from_data(c.graph)) if c.graph else ""
