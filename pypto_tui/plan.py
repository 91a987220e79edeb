"""The kernel plan: every decision steps 1-4 made, frozen, which step 5 renders and nothing else.

The tile calculator decides the tiles (with any unified-buffer step-down, a second phase's tile,
the cube tiles), the loop planner decides the loop (its axis, count and tail), and the pipeline
(`pypto_tui.design`) freezes them with the contract and the dimension plan into one `KernelPlan`.
Code generation takes that plan and writes it down; it never evaluates, ranks or re-plans, so the
Tiles and Loops steps of the app show exactly what the kernel uses.

Pure data: no libcst, no numpy. `tiles` and `loops` build the evaluations defined here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pypto_tui.errors import InputError
from pypto_tui.findings import Finding, has_error
from pypto_tui.kb import FusionRule, KnowledgeBase
from pypto_tui.ops.roles import traits
from pypto_tui.shapes import Shape
from pypto_tui.vocabulary import INDEX_DTYPES, LoopWhy, TailStrategy

if TYPE_CHECKING:
    from pypto_tui.contract.graph import OpGraph, OpNode
    from pypto_tui.contract.model import Contract, Signature
    from pypto_tui.dims import DimPlan
    from pypto_tui.window import WindowPlan

TileSource = Literal["user", "preset", "recommended", "stepped-down"]


# ------------------------------------------------------------------------------------ evaluations
@dataclass(frozen=True, slots=True)
class TileEvaluation:
    """Every number and finding for one vec tile on one shape (built by `tiles.evaluate_tile`)."""

    shape: Shape
    dtype: str
    tile: Shape
    reduce_dim: int | None
    prod: int
    auto_tiles: int
    contiguous_bytes: int
    reduce_segments: int | None
    needs_loop: bool
    ub_bytes: int
    waste_axes: tuple[int, ...]
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not has_error(self.findings)

    def numbers(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "prod": self.prod, "auto_tiles": self.auto_tiles,
                "contiguous_bytes": self.contiguous_bytes, "reduce_segments": self.reduce_segments,
                "ub_bytes": self.ub_bytes}

    def to_dict(self) -> dict[str, Any]:
        return {
            "tile": list(self.tile),
            "prod": self.prod,
            "auto_tiles": self.auto_tiles,
            "contiguous_bytes": self.contiguous_bytes,
            "reduce_segments": self.reduce_segments,
            "needs_loop": self.needs_loop,
            "ub_bytes": self.ub_bytes,
            "waste_axes": list(self.waste_axes),
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True, slots=True)
class CubeEvaluation:
    """set_cube_tile_shapes(m, k, n) against the chip's buffers (built by `tiles.evaluate_cube`)."""

    m: tuple[int, int]
    k: tuple[int, ...]
    n: tuple[int, int]
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    l1_bytes: int
    tasks: int
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"m": list(self.m), "k": list(self.k), "n": list(self.n), "l0a_bytes": self.l0a_bytes,
                "l0b_bytes": self.l0b_bytes, "l0c_bytes": self.l0c_bytes, "l1_bytes": self.l1_bytes,
                "tasks": self.tasks, "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True, slots=True)
class LoopCandidate:
    """One loop count along one axis (built by `loops.candidate`)."""

    loop_count: int
    basic_batch: int
    num_iters: int
    tail: int
    view_shape: Shape
    auto_tiles_per_iter: int
    ring: int | None
    tail_strategy: TailStrategy
    findings: tuple[Finding, ...]
    estimate_us: float | None = None  # the cost estimate (SIM.cost-estimate), when the family has one

    @property
    def ok(self) -> bool:
        return not has_error(self.findings)

    @property
    def has_tail(self) -> bool:
        return self.tail != self.basic_batch

    def to_dict(self) -> dict[str, Any]:
        return {
            "loop_count": self.loop_count,
            "basic_batch": self.basic_batch,
            "num_iters": self.num_iters,
            "tail": self.tail,
            "view_shape": list(self.view_shape),
            "auto_tiles_per_iter": self.auto_tiles_per_iter,
            "ring": self.ring,
            "tail_strategy": self.tail_strategy,
            "findings": [f.to_dict() for f in self.findings],
            "estimate_us": self.estimate_us,
        }


# ------------------------------------------------------------------------------------ geometry
@dataclass(frozen=True)
class Geometry:
    """The kernel's main tensor as the tile and loop steps see it."""

    shape: Shape
    dtype: str
    reduce_dim: int | None
    why: LoopWhy
    matmul: tuple[int, int, int] | None = None  # (M, K, N)


def geometry_of(contract: Contract, dims: DimPlan) -> Geometry:
    """Which tensor the tile applies to: the first kernel input (the output for a matmul). Its dtype is the
    first input's that holds values: an integer index (an embedding's positions) holds none."""
    tensors = [i for i in contract.inputs if i.kind == "tensor"]
    values = [i for i in tensors if i.dtype not in INDEX_DTYPES] or tensors
    dtype = (values[0].dtype if values and values[0].dtype else "fp32")
    if traits(contract.family).operand_layout:
        shapes = dims.kernel_shapes
        out = tuple(dims.output_kernel_shape or ())
        if len(shapes) >= 2 and shapes[0] and shapes[1] and len(out) >= 2:
            M, N = out[-2], out[-1]
            # The reduced axis as the dimension step read it: A's last axis, or its second last when the
            # matmul reads A transposed (a_trans), where A's last axis is M.
            planned_k = (dims.matmul or {}).get("k")
            K = planned_k if isinstance(planned_k, int) else shapes[0][-1]
            return Geometry(out, dtype, None, "matmul" if len(out) == 2 else "auto", (M, K, N))
    if traits(contract.family).tile_on_output and dims.output_kernel_shape:
        return Geometry(tuple(dims.output_kernel_shape), dtype, None, "auto")
    if not dims.kernel_shapes or dims.kernel_shapes[0] is None:
        raise InputError("the dimension plan has no kernel shape: fill the contract's unknown shapes first")
    shape = tuple(dims.kernel_shapes[0])
    why: LoopWhy = "reduce" if (traits(contract.family).whole_axis_loop and len(shape) == 1) else "auto"
    return Geometry(shape, dtype, dims.reduce_axis, why)


# ------------------------------------------------------------------------------------ what a pattern needs
@dataclass(frozen=True, slots=True)
class TileRole:
    """A tensor that gets a vec tile, as a pattern asks for it.

    `live_buffers` is how many tile-sized buffers one op of the pattern holds in the unified buffer
    at once (pack data, measured: BatchNorm's x, expanded scale, expanded shift and result are 4);
    the tile step shrinks a default tile until they fit (O1.ub-step-down). `reducing` says whether
    the op reduces (a reducing op holds ~1.5x its tile), None meaning "when reduce_dim is set".
    `min_rows`: the op pads the product of the tile's leading axes up to this many rows (measured:
    cumsum transposes in 16-row blocks), which the unified-buffer estimate counts. `strict_align`:
    the role's ops include a concat or a reduction, which pypto 0.2.0 refuses when the last tile
    dim is not 32-byte aligned (HW.concat-reduce-align), so a misaligned tile is an error there.
    """

    name: str
    constant: str
    shape: Shape
    dtype: str
    reduce_dim: int | None
    reducing: bool | None = None
    live_buffers: int = 1
    min_rows: int = 1
    strict_align: bool = False  # the role's ops (concat, reductions) refuse an unaligned last tile dim
    # the role's ops select with pypto.where (exact GELU's erf branches, torch.where): its mask and
    # scratch count in the unified buffer (tiles.held_bytes)
    select_mask: bool = False
    # the smallest tile per axis the role's ops take (an axis gathered by index_select needs 2: at 1,
    # pass-verify cannot run the GATHER at Pass_04, HW.gather-tile); None: no floor
    min_tile: Shape | None = None
    # an elementwise epilogue on a matmul's output (FUSE.matmul-separate): the tile's last axis is the
    # cube's N tile and the loop takes one tile of rows per iteration (the design step fixes both)
    cube_n: bool = False
    # a scan carried from chunk to chunk along one axis: (axis, most chunks, most tile elements beyond
    # them) the compiler takes (ops.toml carried_max_*, SCAN.carry-tile); None: no carried chunks
    carry_cap: tuple[int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Needs:
    """What a pattern needs decided before it can write a kernel: its tiles (the first is the main
    one, which the Tiles step ranks), the matmul it tiles on the cube, and the loop's axis."""

    tiles: tuple[TileRole, ...]
    cube: tuple[int, int, int] | None = None  # (M, K, N)
    loop_axis: int = 0
    loop_why: LoopWhy = "auto"
    loop_note: str = ""
    loop_shape: Shape | None = None  # the shape the loop runs over, when it is not the main tile's
    loop_unit: int = 1  # the loop cuts its axis in whole units of this many elements (a conv's output rows)
    loop_max_chunk: int | None = None  # the most elements one iteration may hold on the loop axis (matmul's N)
    layout: tuple[tuple[str, str], ...] = ()  # the pattern's own plan as labelled lines (a conv's im2col plan)
    # further matmuls of the kernel, each with its own cube tiles (attention's two products):
    # (name, (M, K, N), its inputs' dtype or None for cube_dtype)
    more_cubes: tuple[tuple[str, tuple[int, int, int], str | None], ...] = ()
    cube_dtype: str | None = None  # the matmuls' input dtype when the main tile's is another (attention)
    # independent products of that M x K x N (a batched matmul's batch), which the pack's cube search
    # counts as the cube's tasks (B.cube-fill-cores); None: the pattern does not say (its matmul runs in a
    # loop of its own, a conv's per item), and the cube tiles are the pack's starting point
    cube_batch: int | None = None


# ------------------------------------------------------------------------------------ decisions
@dataclass(frozen=True, slots=True)
class TileChoice:
    """The tile a role gets, and how it was decided (the user's, the pack's preset, the ranking's
    first, or that one stepped down to fit the unified buffer: `requested` is then the original)."""

    role: TileRole
    evaluation: TileEvaluation
    source: TileSource
    requested: Shape | None = None
    note: str = ""
    findings: tuple[Finding, ...] = ()

    @property
    def tile(self) -> Shape:
        return self.evaluation.tile

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role.name, "constant": self.role.constant, "tile": list(self.tile),
                "source": self.source, "requested": list(self.requested) if self.requested else None,
                "note": self.note, "evaluation": self.evaluation.to_dict(),
                "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True, slots=True)
class CubeChoice:
    """The cube tiles of the plan's matmul and where they came from."""

    M: int
    K: int
    N: int
    evaluation: CubeEvaluation
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"M": self.M, "K": self.K, "N": self.N, "source": self.source, **self.evaluation.to_dict()}


@dataclass(frozen=True, slots=True)
class LoopChoice:
    """The one loop of the plan: its axis, count, chunk, tail and why it exists."""

    axis: int
    total: int
    shape: Shape
    why: LoopWhy
    reason: str
    candidate: LoopCandidate
    requested: int | None = None
    note: str = ""
    findings: tuple[Finding, ...] = ()

    @property
    def count(self) -> int:
        return self.candidate.loop_count

    @property
    def tail_strategy(self) -> TailStrategy:
        return "main+tail" if self.candidate.has_tail else self.candidate.tail_strategy

    def to_dict(self) -> dict[str, Any]:
        return {"axis": self.axis, "total": self.total, "why": self.why, "reason": self.reason,
                "loop_count": self.count, "requested": self.requested, "tail_strategy": self.tail_strategy,
                "note": self.note, "candidate": self.candidate.to_dict(),
                "findings": [f.to_dict() for f in self.findings]}


@dataclass(frozen=True, slots=True)
class DynamicAxis:
    """One kernel axis left to run time (pypto.DYNAMIC): the kernel reads its size from the tensor
    and runs the plan's loop ceildiv(size, block) times, the last block partial (valid_shape).
    `block` is the loop's chunk at the design's size; `input_axis` the task input's axis it covers."""

    kernel_axis: int
    input_axis: int
    block: int
    source: str  # "the design (--dynamic-axis)" | "the task's DYNAMIC_AXIS"


@dataclass(frozen=True)
class KernelPlan:
    """Everything step 5 renders. `blocked` says why no kernel can be written (then the rest may
    be partial); `pattern` is the id of the pattern that writes it."""

    contract: Contract
    dims: DimPlan
    pattern: str
    flavour: str
    signature: Signature | None
    geometry: Geometry | None = None
    tiles: tuple[TileChoice, ...] = ()
    cube: CubeChoice | None = None
    loop: LoopChoice | None = None
    blocked: str = ""
    more_cubes: tuple[tuple[str, CubeChoice], ...] = ()  # Needs.more_cubes, decided
    dynamic: DynamicAxis | None = None

    def tile(self, role: str = "main") -> TileChoice:
        for t in self.tiles:
            if t.role.name == role:
                return t
        raise KeyError(f"the plan has no '{role}' tile")

    @property
    def main_tile(self) -> TileChoice | None:
        return self.tiles[0] if self.tiles else None

    @property
    def window(self) -> WindowPlan | None:
        """A conv's or pool's im2col plan: the dimension step's, the one the kernel is written from."""
        return self.dims.window

    @property
    def findings(self) -> tuple[Finding, ...]:
        """What the tile and loop decisions reported (step-downs, tails), in plan order."""
        out: list[Finding] = []
        for t in self.tiles:
            out.extend(t.findings)
        for cube in ([self.cube] if self.cube is not None else []) + [c for _, c in self.more_cubes]:
            out.extend(f for f in cube.evaluation.findings if f.level in ("warn", "error"))
        if self.loop is not None:
            out.extend(self.loop.findings)
        return tuple(out)


# ------------------------------------------------------------------------------------ module plans
def fusion_rules(kb: KnowledgeBase | None) -> tuple[FusionRule, ...]:
    """The pack's fusion rules (fusion.toml, read and checked with the rest of the pack by kb.load_pack;
    the bundled default's when no pack is given)."""
    from pypto_tui.kb import bundled_pack_dir, get_kb

    return (kb if kb is not None else get_kb(bundled_pack_dir())).fusion


@dataclass(frozen=True, slots=True)
class KernelGroup:
    """The graph nodes one kernel computes: an anchor (or none, for an elementwise chain) with the
    elementwise nodes it took, the values it reads from outside and the node whose value it writes."""

    index: int
    anchor: str | None  # node id
    nodes: tuple[str, ...]
    reads: tuple[str, ...]
    writes: str
    rule: str  # the fusion rule that decided its extent

    @property
    def name(self) -> str:
        return f"k{self.index}"


@dataclass(frozen=True, slots=True)
class ModulePlan:
    """A task's kernels in order: forward runs them one after another, allocating each group's
    output (`intermediates`: the values one kernel writes and a later one reads)."""

    groups: tuple[KernelGroup, ...]
    output: str
    intermediates: tuple[str, ...]
    views: tuple[str, ...] = ()  # view nodes forward takes itself (of an input, or of a kernel's output)
    outputs: tuple[str, ...] = ()  # OpGraph.outputs: every tensor forward returns when it returns a tuple

    def to_dict(self) -> dict[str, Any]:
        return {"kernels": [{"name": g.name, "anchor": g.anchor, "nodes": list(g.nodes), "reads": list(g.reads),
                             "writes": g.writes, "rule": g.rule} for g in self.groups],
                "output": self.output, "intermediates": list(self.intermediates), "views": list(self.views),
                **({"outputs": list(self.outputs)} if self.outputs else {})}


def decompose(graph: OpGraph) -> OpGraph:
    """The graph with every node whose registry kind has a decomposition (`OpKind.decompose`: a biased
    linear, logsumexp, BatchNorm over rows, global average pooling) replaced by its parts, so the
    partition places each part like any other node. One pass over the registry's table, no list of
    operators here."""
    from dataclasses import replace

    from pypto_tui.contract.graph import Value
    from pypto_tui.ops.registry import kind

    out: list[OpNode] = []
    consts: list[Value] = []
    shapes: dict[str, Any] = {}

    def shape_of(vid: str) -> Any:
        return shapes[vid] if vid in shapes else graph.shape_of(vid)

    def place(n: OpNode, parent: str = "") -> None:  # a part may have a decomposition of its own (F.normalize's
        k = kind(n.op)                                  # norm), never one of its own kind again
        parts = k.decompose(n, shape_of) if k is not None and k.decompose is not None and n.op != parent else None
        if parts is None:
            out.append(n)
            return
        consts.extend(Value(vid, "const", (), "fp32", value, source) for vid, value, source in parts.consts)
        for p in parts.nodes:
            shapes[p.id] = p.shape
        for p in parts.nodes:
            place(p, n.op)

    for n in graph.nodes:
        place(n)
    nodes = _implicit_broadcasts(out, shape_of, graph.results)
    return replace(graph, nodes=_materialized_expands(nodes), values=(*graph.values, *consts))


def _implicit_broadcasts(nodes: list[OpNode], shape_of: Any, kept: tuple[str, ...]) -> list[OpNode]:
    """An expand whose every reader is elementwise and meets, in the same op, an operand of the expanded
    shape (F.normalize's `x / norm.expand_as(x)`) is left to broadcasting: its readers read its source.
    An expand's target is the traced size, a constant, which a kernel's own test at smaller shapes could not
    reach; broadcasting follows the operands at any size."""
    from dataclasses import replace

    from pypto_tui.ops import views as V

    readers = _readers(nodes)

    def implicit(n: OpNode) -> bool:
        steps = [V.step_of(s) for s in n.attrs.get("steps", ())]
        if n.role != "view" or not steps or any(s.kind != "expand" for s in steps) or n.id in kept:
            return False
        rs = readers.get(n.id, [])
        return bool(rs) and all(r.role == "elementwise" and r.shape == n.shape and n.shape is not None and any(
            i != n.id and shape_of(i) == n.shape for i in r.inputs) for r in rs)

    source = {n.id: n.inputs[0] for n in nodes if implicit(n)}
    if not source:
        return nodes
    out = [n for n in nodes if n.id not in source]
    return [replace(n, inputs=tuple(source.get(i, i) for i in n.inputs)) if any(i in source for i in n.inputs)
            else n for n in out]


def _readers(nodes: list[OpNode]) -> dict[str, list[OpNode]]:
    """Each value id -> the nodes that read it, in graph order."""
    readers: dict[str, list[OpNode]] = {}
    for n in nodes:
        for i in n.inputs:
            readers.setdefault(i, []).append(n)
    return readers


def _materialized_expands(nodes: list[OpNode]) -> tuple[OpNode, ...]:
    """A view that widens a tensor (expand) read by a kernel other than an elementwise one (a class token
    `cls.expand(b, -1, -1)` before a cat): an elementwise kernel reads the expand as a broadcasting leaf,
    any other reads a contiguous tensor, which forward may not make (only kernels compute). So such a view
    gets a `clone` after it: an elementwise kernel that writes the widened tensor."""
    from dataclasses import replace

    from pypto_tui.ops import views as V

    readers = _readers(nodes)
    renamed: dict[str, str] = {}
    out: list[OpNode] = []
    for n in nodes:
        if renamed:
            n = replace(n, inputs=tuple(renamed.get(i, i) for i in n.inputs))
        out.append(n)
        widens = n.role == "view" and any(V.step_of(s).kind == "expand" for s in n.attrs.get("steps", ()))
        if widens and any(r.role not in ("elementwise", "view") for r in readers.get(n.id, ())):
            copy = replace(n, id=f"{n.id}c", op="clone", role="elementwise", inputs=(n.id,), attrs={},
                           spelling=f"{n.spelling} (made whole)")
            out.append(copy)
            renamed[n.id] = copy.id
    return tuple(out)


FREE_VIEW_STEPS = ("unsqueeze", "reshape")


def _free_view(n: OpNode) -> bool:
    """A view torch makes without copying (an unsqueeze or reshape of a contiguous tensor): forward
    takes it between two kernels, and the next kernel reads the viewed tensor as an input."""
    from pypto_tui.ops import views as V

    steps = n.attrs.get("steps", ())
    return bool(steps) and all(V.step_of(s).kind in FREE_VIEW_STEPS for s in steps)


def _swaps_last_two(n: OpNode, graph: OpGraph) -> bool:
    """A transpose of the last two axes, the one layout a matmul reads its operand in (transpose_a/b);
    `k.transpose(1, 2)` of (B, T, H, D) is a copy kernel of its own (TRANSPOSE.block-copy)."""
    shape = graph.shape_of(n.inputs[0])
    if shape is None:
        return False
    rank = len(shape)
    if rank < 2:
        return True
    dims = {int(n.attrs.get("dim0", -2)) % rank, int(n.attrs.get("dim1", -1)) % rank}
    return dims == {rank - 2, rank - 1}


def _epilogue_fits(graph: OpGraph, nodes: dict[str, OpNode], members: list[str], n: OpNode) -> bool:
    """Whether elementwise `n` can join an anchor's kernel as its epilogue: the anchor is a plain 2-D
    matmul whose product the kernel writes tile by tile (FUSE.matmul-epilogue), the kernel so far is
    that matmul (its operand transposes) and elementwise nodes, `n` keeps the product's shape and
    every other tensor it reads is a row vector ((N,), (1, N)) or a whole (M, N) tensor that is not
    an operand of the product."""
    anchor = next((nodes[m] for m in members if nodes[m].role not in ("elementwise", "view")), None)
    if anchor is None or anchor.role != "matmul" or anchor.op not in ("matmul", "mm", "linear"):
        return False
    if len(anchor.inputs) != 2 or any(nodes[m].role != "elementwise" and m != anchor.id and nodes[m].op != "transpose"
                                      for m in members):
        return False
    out = anchor.shape
    operand_shapes = [graph.shape_of(i) for i in anchor.inputs]
    if out is None or len(out) != 2 or out[1] == 1 or any(s is None or len(s) != 2 for s in operand_shapes):
        return False
    if n.shape is not None and tuple(n.shape) != tuple(out):
        return False
    inside = set(members)
    for i in n.inputs:
        if i in inside:
            continue
        v = graph.value(i)
        if v is not None and v.kind in ("const", "scalar"):
            continue
        if i in anchor.inputs or any(i in nodes[t].inputs for t in members if nodes[t].op == "transpose"):
            return False
        s = graph.shape_of(i)
        if s is None or tuple(s) not in ((out[1],), (1, out[1]), tuple(out)):
            return False
    return True


Groups = tuple[list[list[str]], list[str | None], list[str]]


def _merge_chains(members: list[list[str]], anchors: list[str | None], decided: list[str], group_of: dict[str, int],
                  consumers: dict[str, list[str]], outs: frozenset[str]) -> Groups:
    """Elementwise chains that only a later chain reads become part of it: `q * cos` and
    `rotate_half(q) * sin` start apart (neither reads the other) and meet in their sum, which
    joined the later one; the earlier then wrote an intermediate the later read straight back.
    Moving a chain to the position of its only reader keeps every kernel reading earlier ones only
    (what it reads was written before it, and no kernel in between reads it)."""
    changed = True
    while changed:
        changed = False
        for g, ids in enumerate(members):
            if anchors[g] is not None or not ids or not outs.isdisjoint(ids):
                continue
            inside = set(ids)
            users = {group_of.get(u, -1) for nid in ids for u in consumers.get(nid, []) if u not in inside}
            if len(users) != 1:
                continue
            h = users.pop()
            if h <= g or anchors[h] is not None:
                continue
            members[h] = ids + members[h]
            for nid in ids:
                group_of[nid] = h
            members[g] = []
            changed = True
    keep = [i for i, ids in enumerate(members) if ids]
    return [members[i] for i in keep], [anchors[i] for i in keep], [decided[i] for i in keep]


def partition(graph: OpGraph, rules: tuple[FusionRule, ...]) -> ModulePlan:
    """Split an OpGraph into kernels, in the graph's (topological) order.

    Every anchor (a node whose role is not elementwise or view) is a kernel; an elementwise node
    joins the kernel of the producer it reads that was formed last, when that kernel is an
    elementwise chain or an anchor whose fusion rule takes it as an epilogue, and starts a kernel
    of its own otherwise. Joining only the last-formed producer's kernel keeps the kernels in an
    order where each reads only earlier ones. A view of a task input alone needs no kernel, and a
    transpose that only a matmul reads is that matmul's operand layout (the
    matmul pattern reads a transposed operand: `bmm(q, k.transpose(1, 2))`), a task input's or an earlier
    kernel's output (rotary keys: `q_rot @ k_rot.transpose(0, 1)`)."""
    by_anchor = {r.anchor: r for r in rules}
    chain_rule = by_anchor.get("elementwise")
    group_of: dict[str, int] = {}
    members: list[list[str]] = []
    anchors: list[str | None] = []
    decided: list[str] = []
    views: list[str] = []
    nodes = {n.id: n for n in graph.nodes}
    consumers: dict[str, list[str]] = {}
    for n in graph.nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n.id)
    prologue: dict[str, list[str]] = {}  # a matmul's id: the transposes of inputs it reads as operands
    leaves: dict[str, str] = {}  # a widening view of an input: the one elementwise node that reads it
    for n in graph.nodes:
        producers = [group_of[i] for i in n.inputs if i in group_of]
        users = consumers.get(n.id, [])
        if n.role == "view" and not producers and not _free_view(n) and len(users) == 1 \
                and nodes[users[0]].role == "elementwise":
            leaves[users[0]] = n.id  # its reader's kernel widens it (a broadcasting leaf, pattern A)
            continue
        if n.role == "view" and not producers:
            views.append(n.id)  # forward takes it on the input
            continue
        if n.role == "view" and _free_view(n):
            views.append(n.id)  # forward takes it on the kernel's output (a free reshape between kernels)
            continue
        if n.op == "transpose" and n.inputs and len(users) == 1 and nodes[users[0]].role == "matmul" and \
                _swaps_last_two(n, graph):
            prologue.setdefault(users[0], []).append(n.id)  # the matmul reads the operand transposed
            continue
        if n.role in ("elementwise", "view") and producers:
            g = max(producers)
            anchor = anchors[g]
            rule = chain_rule if anchor is None else by_anchor.get(nodes[anchor].role)
            if rule is not None and (n.role == "view" or (rule.takes(n.op, "epilogue") and (
                    anchor is None or _epilogue_fits(graph, nodes, members[g], n)))):
                if n.id in leaves:
                    group_of[leaves[n.id]] = g
                    members[g].append(leaves[n.id])
                group_of[n.id] = g
                members[g].append(n.id)
                continue
        for t in prologue.get(n.id, ()):
            group_of[t] = len(members)
        leaf = [leaves[n.id]] if n.id in leaves else []
        for t in leaf:
            group_of[t] = len(members)
        group_of[n.id] = len(members)
        members.append([*prologue.get(n.id, ()), *leaf, n.id])
        is_anchor = n.role not in ("elementwise", "view")
        anchors.append(n.id if is_anchor else None)
        rule = by_anchor.get(n.role) if is_anchor else chain_rule
        decided.append(rule.id if rule is not None else "")
    out = graph.output
    if out is None:
        raise ValueError("a graph without an output has no kernels to split it into")
    outs = frozenset(graph.results)
    if chain_rule is not None:  # without it (the unfused plan) every elementwise op stays a kernel
        members, anchors, decided = _merge_chains(members, anchors, decided, group_of, consumers, outs)

    def used_outside(ids: list[str]) -> list[str]:
        inside = set(ids)
        return [nid for nid in ids if nid in outs or any(nid in nodes[m].inputs for m in nodes if m not in inside)]

    def split(ids: list[str]) -> list[list[str]]:
        """A chain that would write two values (one a later kernel also reads) is cut after the
        first of them: each kernel writes one tensor."""
        outside = used_outside(ids)
        if len(outside) <= 1:
            return [ids]
        cut = ids.index(outside[0]) + 1
        return split(ids[:cut]) + split(ids[cut:])

    chunks: list[tuple[list[str], str | None, str]] = []
    for ids, anchor, rule_id in zip(members, anchors, decided, strict=True):
        for k, part in enumerate(split(ids)):
            chunks.append((part, anchor if k == 0 else None,
                           rule_id if k == 0 else (chain_rule.id if chain_rule is not None else "")))
    groups = []
    for g, (ids, anchors_g, decided_g) in enumerate(chunks):
        inside = set(ids)
        reads: list[str] = []
        for nid in ids:
            for i in nodes[nid].inputs:
                if i not in inside and i not in reads:
                    reads.append(i)
        outside = used_outside(ids)  # at most one: split() cut the chain after each earlier one
        writes = outside[0] if outside else ids[-1]
        groups.append(KernelGroup(g, anchors_g, tuple(ids), tuple(reads), writes, decided_g))
    inter = tuple(grp.writes for grp in groups if grp.writes not in outs)
    return ModulePlan(tuple(groups), out, inter, tuple(views), graph.outputs)
