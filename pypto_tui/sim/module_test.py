"""Test sizes for a module of several kernels (a chain of operators), chosen as the
single-kernel test shapes are: as small as every kernel's design allows.

A chain's tensors all follow from the task's size constants, so the test is the task file itself
with smaller constants (contract/task_sizes.py): the baseline, its weights and every intermediate
stay consistent. Each constant is shrunk as far as every kernel still keeps its tile (two tiles
along a tiled reduction, scan or matmul K), its cube tiles, and a loop of at least two iterations
with the tail it had; the batch goes first. Only when that leaves a tensor over the verify limit
is a kernel's design given up, and the report says which.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pypto_tui.design import ModuleStages, Pipeline, compose_module, module_stages
from pypto_tui.errors import InputError
from pypto_tui.sim import scaled

GEMM_VERIFY_ELEMENTS = 1 << 21
"""The largest tensor a module whose cube kernels are plain matmuls may have to keep its design: a
linear's weight must keep two K tiles and every N tile of an elementwise epilogue whose tile spans
the row. Measured: KernelBench level 2 task 12 at (256, 256) x (256, 8192), 2M elements, kept every
kernel's design and verified in 86 s (peak RSS 1.3 GB) on the 2-core machine with a second job running."""

SIZED_STEP_FIELDS = ("shape", "start", "length")
"""A view step's fields that follow the task's sizes: a reshape's shape, and where a slice starts and how
long it is (`qkv.split(n_embd, dim=2)`, a causal mask's `bias[:, :, :T, :T]`). The graph at another size
is the same graph when only these differ; counting them as structure held KernelBench level-3 44 (a
GPT block) at its full sequence and width, x (2, 512, 768), where its end-to-end test needed 6.65 GB."""



@dataclass(frozen=True)
class StageKeep:
    """What one kernel of the full-size module uses, to be kept at the test sizes."""

    keep: scaled.DesignToKeep | None
    tile_constant: str | None
    constants: dict[str, Any]


@dataclass
class Candidate:
    values: dict[str, int]
    pipeline: Pipeline
    stages: ModuleStages | None   # None for a single kernel's task
    measure: int
    problems: list[str]


@dataclass
class ModuleTest:
    """The module to run and the sizes it runs at; `kept` says whether every kernel's design is."""

    pipeline: Pipeline
    kernel: Any
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)   # name: (task's, test's)
    kept: bool = True
    notes: list[str] = field(default_factory=list)
    counts: tuple[scaled.AxisCount, ...] = ()   # each kernel's counted axes at these sizes
    second: ModuleTest | None = None            # the second size tried (another count on those axes)


def _design_constants(gen: Any, tile_name: str | None) -> dict[str, Any]:
    """The constants that carry a kernel's design: its main tile and its cube tiles (a conv's window
    tile follows the image, as in the single-kernel check)."""
    from pypto_tui.sim.verify_shapes import kernel_constants

    return {k: v for k, v in kernel_constants(gen).items() if k == tile_name or k in ("CUBE_M", "CUBE_K", "CUBE_N")}


def _structure(graph: Any) -> list[Any]:
    """The graph without its sizes: the ops, their wiring and every attribute that is not a size."""
    sizes = {"in_channels", "out_channels", "num_features", "num_channels", "in_features", "out_features",
             "normalized_shape", "embed_dim"}
    shapes = _shapes(graph)

    def steps_of(n: Any) -> list[dict[str, Any]]:
        """A view's steps without their sizes: a reshape's follow the task's, and a select of an axis's
        last position (`out[:, -1]`, an RNN's last step) is "last" at any length of the axis."""
        from pypto_tui.ops import views as V

        cur = shapes.get(n["inputs"][0]) if n.get("inputs") else None
        out = []
        for raw in n["attrs"]["steps"]:
            step = dict(raw)
            kept = {k: v for k, v in step.items() if k not in SIZED_STEP_FIELDS}
            if cur is not None and step.get("kind") == "select" and step.get("index") == cur[step["dim"]] - 1:
                kept["index"] = "last"
            try:
                cur = V.out_shape(V.step_of(step), tuple(cur)) if cur is not None else None
            except (ValueError, IndexError, KeyError):
                cur = None
            out.append(kept)
        return out

    def attrs(n: Any) -> dict[str, Any]:
        out = {k: v for k, v in n["attrs"].items() if k not in sizes}
        if out.get("groups", 1) > 1 and out.get("groups") == n["attrs"].get("in_channels"):
            out["groups"] = "depthwise"  # one group per channel at any channel count
        if "steps" in out:
            out["steps"] = steps_of(n)
        return out

    nodes = [(n["op"], list(n["inputs"]), attrs(n)) for n in graph.get("nodes", ())]
    values = [(v["id"], v["kind"], v.get("value")) for v in graph.get("values", ())]
    return [nodes, values, graph.get("output")]


def _shapes(graph: Any) -> dict[str, Any]:
    """Every value's and node's shape in a graph's data form, by id."""
    shapes = {v["id"]: v.get("shape") for v in graph.get("values", ())}
    shapes.update({n["id"]: n.get("shape") for n in graph.get("nodes", ())})
    return shapes


def _largest(graph: Any) -> int:
    shapes = [v.get("shape") for v in graph.get("values", ())] + [n.get("shape") for n in graph.get("nodes", ())]
    return max((math.prod(s) for s in shapes if s), default=0)


RECURRENT_STEP_ELEMENTS = scaled.MAX_VERIFY_ELEMENTS // 128
"""What one time step of one recurrent layer costs the verification, in the elements of the tensor that
would cost as much: the interpreter runs every step of every layer through every pass, so a test of 128
layer-steps is as large as the verify limit allows, and the search's first target (keeping every design)
is 8 layer-steps, as a two-layer fixture of 4 steps. Measured on the 2-core machine beside other runs: a
two-layer LSTM of 8 steps (16 layer-steps, 9 kernels) verified in 57 s and a time-major stack of 4 layer
nodes x 6 steps in 82 s; KernelBench level 3's 36 (6 layers x 512 steps, at its tensors' sizes) did not
finish in 25 minutes."""


def _recurrent_work(graph: Any) -> int:
    """The recurrent layers' steps, as elements (RECURRENT_STEP_ELEMENTS a layer-step): the size a module
    of LSTM or GRU layers is shrunk by, whose tensors alone (a (10, 512, 128) sequence) fit the limit."""
    shapes = _shapes(graph)
    steps = 0
    for n in graph.get("nodes", ()):
        x = shapes.get(n["inputs"][0]) if n.get("role") == "recurrent" and n.get("inputs") else None
        steps += _steps_of(x, n.get("attrs", {}).get("batch_first")) or 0
    return steps * RECURRENT_STEP_ELEMENTS


def _steps_of(sequence: Any, batch_first: Any) -> int | None:
    """The time steps of a recurrent layer's (batch, steps, features) or (steps, batch, features) sequence."""
    if not sequence or len(sequence) != 3:
        return None
    return int(sequence[1] if batch_first else sequence[0])


def _window_work(stages: ModuleStages) -> int:
    """The largest tensor a conv or pool kernel builds for itself (its prepared input, zero-inserted
    for a transposed conv), measured as the single-kernel test measures it: KernelBench level 2
    task 3 (a transposed 3-D conv) ran its worker out of its address space at sizes whose graph
    tensors were all within the limit."""
    from pypto_tui.sim.verify_shapes import full_shapes, measure_elements

    largest = 0
    for s in stages.stages:
        try:
            largest = max(largest, measure_elements(s.pipeline)(full_shapes(s.pipeline)))
        except (InputError, ValueError):
            continue
    return largest


def _store(source: str, name: str) -> Path:
    """The shrunk task, stored by its content under the result cache (the worker runs it as the
    baseline; the cache key hashes its text, not its path)."""
    from pypto_tui.fileio import write_atomic
    from pypto_tui.sim.cache import cache_root

    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = cache_root() / "tasks" / digest / name
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, source, force=True)  # another worker may have written the same text
    return path


def stage_keeps(stages: ModuleStages) -> list[StageKeep]:
    from pypto_tui.sim.verify_shapes import design_to_keep, kernel_constants, tile_constant_name

    out = []
    for s in stages.stages:
        consts = kernel_constants(s.kernel)
        name = tile_constant_name(consts, s.pipeline.chosen_tile())
        out.append(StageKeep(design_to_keep(s.pipeline, s.kernel), name, _design_constants(s.kernel, name)))
    return out


def _problems(keeps: list[StageKeep], stages: ModuleStages) -> list[str]:
    out = []
    for k, s in zip(keeps, stages.stages, strict=True):
        if k.keep is None:
            continue
        try:
            g = s.pipeline.geometry()
            own = tuple(s.pipeline.needs().tiles[0].shape) if k.keep.tile_shape is not None else None
        except (InputError, IndexError):
            out.append(f"kernel {s.index} ({s.ops}) has no layout")
            continue
        out += [f"kernel {s.index} ({s.ops}): {p}" for p in scaled.kept_problems(k.keep, g.shape, g.matmul, own)]
    return out


class _Search:
    """Candidate sizes of a module's task file, each judged by whether every kernel keeps its design."""

    def __init__(self, pipeline: Pipeline, full: ModuleStages | None) -> None:
        c = pipeline.contract()
        if not c.task_path:
            raise InputError("a module is verified at smaller sizes of its task file: give the task as a file")
        self.pipeline = pipeline
        self.name = Path(c.task_path).name
        self.source = Path(c.task_path).read_text(encoding="utf-8")
        self.structure = _structure(c.graph or {})
        self.keeps = stage_keeps(full) if full is not None else []
        self.full = full
        self.tried: dict[tuple[tuple[str, int], ...], Candidate | None] = {}

    def evaluate(self, values: dict[str, int]) -> Candidate | None:
        from pypto_tui.contract.task_sizes import with_sizes

        key = tuple(sorted(values.items()))
        if key in self.tried:
            return self.tried[key]
        found: Candidate | None = None
        try:
            path = _store(with_sizes(self.source, values), self.name)
            p = Pipeline(self.pipeline.kb, replace(self.pipeline.design, task=str(path), contract_edits={}))
            graph = p.contract().graph or {}
            if not graph.get("problems") and _structure(graph) == self.structure:
                found = self.judge(values, p, graph)
        except (InputError, ValueError, OSError):
            found = None
        self.tried[key] = found
        return found

    def judge(self, values: dict[str, int], p: Pipeline, graph: Any) -> Candidate | None:
        assert self.full is not None
        stages = module_stages(p)
        if stages is None or stages.refused or [s.ops for s in stages.stages] != [s.ops for s in self.full.stages]:
            return None
        measure = max(_largest(graph), _window_work(stages), _recurrent_work(graph))
        return Candidate(dict(values), p, stages, measure, _problems(self.keeps, stages))


class _KernelSearch(_Search):
    """Candidate sizes of a one-kernel task: the kernel keeps the full-size design `keep` at the
    candidate's own shapes (its geometry, its tile's tensor, its loop and cube tiles)."""

    def __init__(self, pipeline: Pipeline, keep: scaled.DesignToKeep) -> None:
        super().__init__(pipeline, None)
        c = pipeline.contract()
        self.keep = keep
        self.kind = (c.family, c.op)
        self.gemms = _conv_gemms(c) if keep.cube and keep.matmul is None else []

    def judge(self, values: dict[str, int], p: Pipeline, graph: Any) -> Candidate | None:
        from pypto_tui.sim.verify_shapes import full_shapes, measure_elements, tile_tensor_at

        c = p.contract()
        if (c.family, c.op) != self.kind or not c.supported:
            return None
        shapes = full_shapes(p)
        g = p.geometry()
        problems = scaled.kept_problems(self.keep, g.shape, g.matmul, tile_tensor_at(p, self.keep, shapes))
        if self.gemms and self.keep.cube:
            problems += _cube_problems(self.gemms, _conv_gemms(c), self.keep.cube)
        problems += _window_room(c) + _plane_room(p, self.keep)
        return Candidate(dict(values), p, None, max(_largest(graph), measure_elements(p)(shapes)), problems)


def _is_batch(unit: tuple[str, ...], values: dict[str, int], batch: int | None) -> bool:
    return any("batch" in n.lower() for n in unit) or (batch is not None and values[unit[0]] == batch
                                                      and unit[0].lower().startswith("b"))


def _order(groups: list[tuple[str, ...]], values: dict[str, int], batch: int | None) -> list[tuple[str, ...]]:
    """The batch first (no tile or loop depends on it, usually), then the largest sizes."""
    return sorted(groups, key=lambda u: (not _is_batch(u, values, batch), -values[u[0]], u))


def _kernels_given_up(problems: list[str]) -> set[str]:
    """The kernels a candidate's problems name ('kernel 1 (max_pool): ...' -> 'kernel 1 (max_pool)')."""
    return {p.split(":", 1)[0] for p in problems}


def _shrink(search: _Search, start: Candidate, units: list[tuple[str, ...]], keep: bool, budget: int,
            given_up: set[str] | None = None) -> Candidate:
    """Each unit in turn halved as far as the candidate stays buildable (and, with `keep`, keeps
    every kernel's design but those in `given_up`), but no further than needed to bring the
    largest tensor within `budget`; stops once it is."""
    best = start
    allowed = given_up or set()
    for unit in units:
        if best.measure <= budget:
            break
        value = best.values[unit[0]]
        steps = [value >> k for k in range(1, value.bit_length()) if value >> k >= 2]

        def at(i: int, base: Candidate = best, unit: tuple[str, ...] = unit,
               steps: list[int] = steps) -> Candidate | None:
            cand = search.evaluate({**base.values, **dict.fromkeys(unit, steps[i])})
            ok = (cand is not None and (not keep or _kernels_given_up(cand.problems) <= allowed)
                  and cand.measure <= base.measure)
            return cand if ok else None

        lo, hi = -1, len(steps) - 1  # the furthest acceptable halving (acceptability is monotone)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if at(mid) is not None:
                lo = mid
            else:
                hi = mid - 1
        if lo < 0:
            continue
        furthest = at(lo)
        assert furthest is not None
        if furthest.measure <= budget:  # the least halving that is within budget
            first, last = 0, lo
            while first < last:
                mid = (first + last) // 2
                cand = at(mid)
                if cand is not None and cand.measure <= budget:
                    last = mid
                else:
                    first = mid + 1
            furthest = at(first) or furthest
        best = furthest
    return best


def module_test(pipeline: Pipeline, full: ModuleStages) -> ModuleTest:
    """The module at test sizes: every kernel's design kept where the verify limit allows."""
    from pypto_tui.contract.task_sizes import size_constants, size_groups

    search = _Search(pipeline, full)
    values = size_constants(search.source)
    start = search.evaluate(values)
    if start is None:
        raise InputError("the task's module could not be rebuilt from its own file: verify it with --scale full")
    first = pipeline.contract().tensor_inputs
    batch = first[0].shape[0] if first and first[0].shape else None
    units = _order(size_groups(search.source), values, batch)
    limit = _module_limit([k.keep for k in search.keeps if k.keep is not None])
    best = _shrink(search, start, units, keep=True, budget=scaled.VERIFY_ELEMENTS)
    notes: list[str] = []
    kept = not best.problems
    if best.measure > limit:
        kept_at = best.measure
        largest_first = sorted(units, key=lambda u: (-best.values[u[0]], u))  # fewest kernels given up
        best = _shrink(search, best, largest_first, keep=False, budget=limit)
        # The designs given up stay given up; the batch still shrinks as far as the others allow
        # (KernelBench level-2 10 kept 128 images of a transposed conv's test and ran out of memory).
        batches = [u for u in units if _is_batch(u, values, batch)]
        best = _shrink(search, best, batches, keep=True, budget=scaled.VERIFY_ELEMENTS,
                       given_up=_kernels_given_up(best.problems))
        kept = not best.problems
        notes.append(f"keeping every kernel's design needs a tensor of {kept_at} elements, over the verify limit "
                     f"of {limit}; `--scale full` verifies the design as chosen")
    notes += [f"not kept: {p}" for p in best.problems]
    shrunk = best.measure
    counted = _spread_module(search, best, limit, shrunk)
    best = search.evaluate(counted.values) or best
    test = _module_at(search, best, values, kept, notes + counted.notes, counted.axes)
    second = _spread_module(search, best, limit, shrunk, {a.what: a.count for a in counted.axes},
                            scaled.SECOND_GROWTH)
    again = search.evaluate(second.values) if second.values != best.values else None
    if again is not None:
        test.second = _module_at(search, again, values, kept, list(notes), second.axes)
    return test


def _module_at(search: _Search, best: Candidate, values: dict[str, int], kept: bool, notes: list[str],
               counts: tuple[scaled.AxisCount, ...]) -> ModuleTest:
    """The module at the candidate's sizes, each kernel with the full module's design given
    explicitly; `kept` turns false when a kernel's design constants differ there."""
    assert best.stages is not None  # a module's candidates always carry their stages
    test_stages = _with_full_designs(search.keeps, best.stages)
    kernel = compose_module(best.pipeline, test_stages)
    for k, s in zip(search.keeps, test_stages.stages, strict=True):
        got = _design_constants(s.kernel, k.tile_constant)
        if got != k.constants and kept:
            kept = False
            notes.append(f"not kept: kernel {s.index} ({s.ops}) sets {got} at the test sizes, {k.constants} "
                         "at the task's")
    sizes = {n: (values[n], best.values[n]) for n in values if best.values[n] != values[n]}
    return ModuleTest(best.pipeline, kernel, sizes, kept, notes, counts)


def _spread_module(search: _Search, best: Candidate, limit: int, shrunk: int,
                   avoid: dict[str, int] | None = None, growth: float = scaled.SPREAD_GROWTH) -> scaled.Spread:
    """The size constants with every kernel's counted axes (a tiled reduction or scan axis, a
    matmul's K, a recurrent layer's time steps) at an odd tile count of at least three (scaled.spread):
    the shrink above stops at two
    tiles, and KernelBench level-2 14's row sum hard-coded to the 2048 columns it shrank to passed.
    A candidate keeps every design `best` keeps and stays within the module's element limit, or the
    shrink's largest tensor `shrunk` when larger, times `growth` (scaled.SPREAD_GROWTH, SECOND_GROWTH
    for the second size); a kernel whose design is given up has no counted axes."""
    from pypto_tui.sim.verify_shapes import loop_iterations

    given_up = _kernels_given_up(best.problems)
    full_steps = {s.index: _time_steps(s) for s in search.full.stages} if search.full is not None else {}

    def probe(v: dict[Any, int]) -> scaled.Probe | None:
        cand = search.evaluate({str(k): n for k, n in v.items()})
        if cand is None or cand.stages is None:
            return None
        axes: list[scaled.AxisCount] = []
        iterations = 1
        for k, s in zip(search.keeps, cand.stages.stages, strict=True):
            steps, full = _time_steps(s), full_steps.get(s.index)
            if steps is not None and full is not None:  # one loop iteration a time step, carrying the state
                axes.append(scaled.AxisCount(f"kernel {s.index} ({s.ops}): time steps", steps, 1, full))
            if k.keep is None or f"kernel {s.index} ({s.ops})" in given_up:
                continue
            try:
                g = s.pipeline.geometry()
                own = tuple(s.pipeline.needs().tiles[0].shape) if k.keep.tile_shape is not None else None
            except (InputError, IndexError):
                return None
            axes += scaled.counted_axes(k.keep, g.shape, g.matmul, own, prefix=f"kernel {s.index} ({s.ops}): ")
            iterations = max(iterations, loop_iterations(k.keep, g.shape))
        kept = (_kernels_given_up(cand.problems) <= given_up
                and cand.measure <= max(limit, shrunk) * growth)
        return scaled.Probe(tuple(axes), kept, cand.measure, iterations)

    found = scaled.spread(dict(best.values), list(best.values), probe, avoid)
    found.values = {str(k): n for k, n in found.values.items()}
    return found


def _time_steps(stage: Any) -> int | None:
    """A recurrent layer's time steps (its sequence's time axis), a counted axis of the module test: two
    steps carry the state from one step to the next only once, so a state that is never read back (h
    reset each step, the gates of step 0 reused) would pass; three steps carry it twice."""
    c = stage.pipeline.contract()
    if c.family != "recurrent" or not c.operands:
        return None
    return _steps_of(c.operands[0].shape, c.op_args.get("batch_first"))


def wiring_test(pipeline: Pipeline, full: ModuleStages) -> ModuleTest:
    """The module at its task's size constants shrunk as far as it builds (to the vector verify size),
    each kernel re-planned at those sizes: the designs are not kept. Why: once every kernel has been
    verified on its own at shapes that keep its design (sim/per_kernel.py), the module end to end only
    checks how they are wired (their order, forward's views, the task's parameters), and the sizes that
    keep every design at once are what ran level-2 conv chains out of memory or time."""
    from pypto_tui.contract.task_sizes import size_constants, size_groups

    search = _Search(pipeline, full)
    values = size_constants(search.source)
    start = search.evaluate(values)
    if start is None:
        raise InputError("the task's module could not be rebuilt from its own file: verify it with --scale full")
    first = pipeline.contract().tensor_inputs
    batch = first[0].shape[0] if first and first[0].shape else None
    best = _shrink(search, start, _order(size_groups(search.source), values, batch), keep=False,
                   budget=scaled.VERIFY_ELEMENTS)
    assert best.stages is not None  # a module's candidates always carry their stages
    sizes = {n: (values[n], best.values[n]) for n in values if best.values[n] != values[n]}
    note = ("the module end to end runs at the smallest sizes its task builds at, each kernel re-planned there: "
            "it checks the wiring; each kernel's design is verified on its own")
    return ModuleTest(best.pipeline, compose_module(best.pipeline, best.stages), sizes, kept=False, notes=[note])


def declared_stages(stages: ModuleStages, constants: dict[str, object]) -> tuple[ModuleStages, list[str]]:
    """The module's kernels with the design a kernel file declares for each (its `<TILE>_K<i>`,
    `LOOP_COUNT_K<i>`, `CUBE_M_K<i>`... constants, named as compose.py suffixes the generated
    module's), so `verify --kernel` picks test sizes for the file's tiles, loops and cube tiles
    rather than the generated ones. Returns the stages and a note for each constant it could not
    apply (that kernel keeps the generated design)."""
    from pypto_tui.design import kernel_of
    from pypto_tui.sim.verify_shapes import kernel_constants, tile_constant_name

    out, notes = [], []
    for s in stages.stages:
        i = s.index
        ours = kernel_constants(s.kernel)
        tile_name = tile_constant_name(ours, s.pipeline.chosen_tile())
        changes: dict[str, Any] = {}
        tile = constants.get(f"{tile_name}_K{i}") if tile_name else None
        if isinstance(tile, list | tuple) and _ints(tile) and list(tile) != list(ours.get(tile_name or "") or ()):
            changes["tile"] = list(tile)
        loop = constants.get(f"LOOP_COUNT_K{i}")
        if isinstance(loop, int) and not isinstance(loop, bool) and loop > 0 and loop != s.pipeline.chosen_loop_count():
            changes["loop_count"] = loop
        cube = {a: v for a in "mkn" if isinstance(v := constants.get(f"CUBE_{a.upper()}_K{i}"), list | tuple)}
        if len(cube) == 3 and all(_ints(v) for v in cube.values()) and any(
                list(v) != list(ours.get(f"CUBE_{a.upper()}") or ()) for a, v in cube.items()):
            changes["cube"] = {a: list(v) for a, v in cube.items()}
        if not changes:
            out.append(s)
            continue
        gen: Any = None
        try:
            given = s.pipeline.with_design(**changes)
            gen = kernel_of(given)
            why = gen.reason
        except InputError as exc:
            why = str(exc)
        if gen is None or not gen.supported:
            notes.append(f"kernel {i} ({s.ops}): the kernel file's {sorted(changes)} could not be laid out for "
                         f"this task ({why}); its test sizes keep the generated design")
            out.append(s)
            continue
        out.append(replace(s, pipeline=given, kernel=gen))
    return replace(stages, stages=tuple(out)), notes


def _ints(v: object) -> bool:
    return isinstance(v, list | tuple) and bool(v) and all(
        isinstance(t, int) and not isinstance(t, bool) and t > 0 for t in v)


def _window_room(c: Any) -> list[str]:
    """A conv's or pool's spatial sizes keep room for two output positions, as the shapes' own
    floors do (contract/conv.py min_sizes). KernelBench level-1 46 (avg pool 3-D, kernel 3,
    stride 2) at depth 2 had one output position and pypto failed with 'F7A001! idx < size_'."""
    from pypto_tui.contract.conv import WindowError, min_sizes, window_spec

    try:
        spatial = window_spec(c).spatial
    except (WindowError, ValueError, InputError):
        return []
    floors = min_sizes(c)
    return [f"spatial axis {i} {size} leaves room for fewer than two output positions (needs {floors[size]})"
            for i, size in enumerate(spatial) if size < floors.get(size, 0)]


def _plane_room(p: Pipeline, keep: scaled.DesignToKeep) -> list[str]:
    """A pool that keeps its block of planes (`keep.exact_axes`) runs its test planes, as the shapes'
    own floors do (WindowPlan.test_planes)."""
    from pypto_tui.sim.verify_shapes import window_plan_of

    plan = window_plan_of(p) if keep.exact_axes else None
    if plan is None or plan.test_planes is None:
        return []
    planes = plan.spec.batch * plan.spec.in_channels
    if planes < plan.test_planes:
        return [f"{planes} (image, channel) planes: fewer than the {plan.test_planes} a block of "
                f"{plan.channels_per_item} tests with"]
    return []


def _conv_gemms(c: Any) -> list[tuple[int, int]]:
    """The (K, N) of each matmul a conv runs on the cube: its window (input channels per group x
    kernel taps, output channels per group), and a depthwise-separable conv's pointwise stage."""
    from pypto_tui.contract.conv import WindowError, window_spec

    try:
        spec = window_spec(c)
    except (WindowError, ValueError, InputError):
        return []
    groups = max(spec.groups, 1)
    out = [(spec.in_channels // groups * math.prod(spec.kernel), spec.out_channels // groups)]
    if spec.pointwise is not None:
        out.append((spec.pointwise.in_channels, spec.pointwise.out_channels))
    return out


def _cube_problems(full: list[tuple[int, int]], new: list[tuple[int, int]], cube: tuple[int, int, int]) -> list[str]:
    """Smaller channels keep the L1 cube tiles of the conv's matmuls as a plain matmul keeps them
    (scaled.kept_problems): whole tiles along K and N, and two along K where the task has two."""
    if len(full) != len(new):
        return ["the conv's matmuls change"]
    _, k, n = cube
    problems = []
    for (fk, fn), (nk, nn) in zip(full, new, strict=True):
        found = (scaled.whole_tiles(fk, nk, k, "K"), scaled.two_tiles(fk, nk, k, "K"),
                 scaled.whole_tiles(fn, nn, n, "N"))
        problems += [p for p in found if p]
    return problems


def kernel_task_at_sizes(pipeline: Pipeline, keep: scaled.DesignToKeep
                         ) -> tuple[Pipeline, dict[str, tuple[int, int]]] | None:
    """A one-kernel task rewritten at smaller size constants that still keep `keep` (the full-size
    design), or None when none does (or the task has no size constants, or an edited contract).

    Why: shrinking a task's input tensors cannot reach a size the module fixes in `__init__` (a
    norm's features, a conv's channels) nor tell apart two sizes that happen to be equal (N = M =
    4096 in KernelBench 12), so a design that needs one long axis could only be kept at tens of
    millions of elements. The task's own constants change each size on its own, and the baseline's
    weights follow."""
    from pypto_tui.contract.task_sizes import size_constants, size_groups

    if pipeline.design.contract_edits:
        return None
    try:
        search = _KernelSearch(pipeline, keep)
        values = size_constants(search.source)
    except (InputError, OSError):
        return None
    start = search.evaluate(values) if values else None
    if start is None or start.problems:
        return None
    first = pipeline.contract().tensor_inputs
    batch = first[0].shape[0] if first and first[0].shape else None
    best = _shrink(search, start, _order(size_groups(search.source), values, batch), keep=True,
                   budget=scaled.VERIFY_ELEMENTS)
    if best is start:
        return None
    return best.pipeline, {n: (values[n], best.values[n]) for n in values if best.values[n] != values[n]}


def _module_limit(keeps: list[scaled.DesignToKeep]) -> int:
    """The largest tensor the test may hold: a window kernel's limit where there is one (a conv's
    prepared input grows past its tensors), else a plain GEMM's, else the vector limit."""
    if not keeps:
        return scaled.MAX_VECTOR_VERIFY_ELEMENTS
    if any(k.tile_shape is not None or (k.cube and not k.matmul) for k in keeps):
        return min(k.element_limit for k in keeps)
    if any(k.matmul is not None for k in keeps):
        return GEMM_VERIFY_ELEMENTS
    return scaled.MAX_VECTOR_VERIFY_ELEMENTS


def _with_full_designs(keeps: list[StageKeep], stages: ModuleStages) -> ModuleStages:
    """Each kernel at the test sizes with the full module's tile, cube tiles and a loop count that
    keeps its iterations and tail, given explicitly (nothing re-planned at the smaller sizes)."""
    out = []
    for k, s in zip(keeps, stages.stages, strict=True):
        if k.keep is None:
            out.append(s)
            continue
        changes: dict[str, Any] = {}
        tile = k.constants.get(k.tile_constant) if k.tile_constant else None
        if tile is not None:
            changes["tile"] = list(tile)
        if k.keep.cube:
            changes["cube"] = {a: list(k.constants[f"CUBE_{a.upper()}"]) for a in "mkn"
                               if f"CUBE_{a.upper()}" in k.constants}
        try:
            g = s.pipeline.geometry()
            count = scaled.loop_count_at(k.keep, g.shape) if k.keep.loop_count else None
        except InputError:
            count = None
        if count:
            changes["loop_count"] = count
        if not changes:
            out.append(s)
            continue
        from pypto_tui.design import kernel_of

        given = s.pipeline.with_design(**changes)
        try:
            gen = kernel_of(given)
        except InputError:
            out.append(s)
            continue
        out.append(replace(s, pipeline=given, kernel=gen) if gen.supported else s)
    return replace(stages, stages=tuple(out))


__all__ = ["ModuleTest", "declared_stages", "kernel_task_at_sizes", "module_test", "stage_keeps", "wiring_test"]
