"""Verification: a kernel (generated from the design, or any kernel file) against the task's torch
baseline, through pypto's interpreter and every compiler pass it checks.

A verification passes only when the interpreter's values match torch AND every compiler pass
pass-verify checks reports PASS at every place it checked (passes.py, rule
V020.every-pass-verified). By default it runs at reduced shapes that keep the chosen tile, loop
count and cube tiles meaningful (scaled.py); whatever could not be kept is reported, what and why,
never silently replaced. `scale="full"` runs the task's own shapes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pypto_tui.design import Pipeline, split_by_graph, static_refusal
from pypto_tui.errors import InputError
from pypto_tui.findings import Finding
from pypto_tui.sim import jobs as J
from pypto_tui.sim import scaled
from pypto_tui.sim.design_runs import Progress, Status, init_args, input_specs, variant
from pypto_tui.sim.kernel_file import KernelFile, module_constants, read_kernel_file
from pypto_tui.sim.passes import PASS_FIELDS
from pypto_tui.sim.verify_shapes import (
    aligned_last,
    fmt_value,
    full_shapes,
    generated_kernel,
    geometry_at,
    graph_lays_out,
    kernel_constants,
    measure_elements,
    spread_shapes,
    tile_constant_name,
    tile_fits,
    tile_tensor_at,
    tiled_shapes,
    with_shapes,
)
from pypto_tui.sim.verify_shapes import design_to_keep as design_to_keep
from pypto_tui.sim.verify_shapes import small_shapes as small_shapes

SCALES = ("small", "full")


@dataclass
class VerifyReport:
    """What `verify` says. `tile` and `loop_count` are what the verified kernel uses;
    `design_tile` and `design_loop_count` what the design asked for; `changes` says what differs
    and why (empty when `design_kept`)."""

    supported: bool
    passed: bool
    reason: str
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    fail_share: float | None = None
    shapes: dict[str, list[int]] = field(default_factory=dict)
    scale: str = "small"
    tile: list[int] | None = None
    loop_count: int | None = None
    status: str | None = None
    wall_s: float | None = None
    outputs: list[dict[str, Any]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    kernel: str = "generated"
    design_tile: list[int] | None = None
    design_loop_count: int | None = None
    design_kept: bool = True
    changes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    passes_expected: list[str] = field(default_factory=list)
    passes_checked: list[str] = field(default_factory=list)
    missing_passes: list[str] = field(default_factory=list)
    first_failing_pass: str | None = None
    pass_rows: int | None = None
    peak_rss_mb: float | None = None
    criterion: str = ""
    criterion_source: str = ""
    tolerances: dict[str, list[float]] = field(default_factory=dict)
    trials: int = 0
    trials_run: int | None = None
    inputs_clobbered: bool | None = None
    pypto: str | None = None
    per_kernel: bool = False            # each kernel verified on its own first (sim/per_kernel.py)
    kernel_verdicts: list[dict[str, Any]] = field(default_factory=list)  # ... each one's verdict, errors, passes
    kernels: int = 1                                              # kernels in the module checked
    kernel_designs: list[dict[str, Any]] = field(default_factory=list)  # a module's: each kernel's tile and loop
    sizes: dict[str, list[int]] = field(default_factory=dict)     # a chain's size constants: [task's, test's]
    kernels_defined: int | None = None  # the jit kernels the module checked defines
    kernels_run: int | None = None      # how many of them launched (each must: sim/guard.py)
    outside_kernels: list[dict[str, Any]] = field(default_factory=list)  # torch work forward did itself
    first_diverging_kernel: int | None = None  # a failing module: the first kernel off its reference
    failed_kernel: dict[str, Any] | None = None  # a compile failure: the jit kernel's name and module line
    shapes_why: str = ""                # why the test runs at `shapes`
    tile_counts: list[dict[str, Any]] = field(default_factory=list)  # each counted axis: its tiles and why
    size_trials: list[dict[str, Any]] = field(default_factory=list)  # every size tried (the first is `shapes`)
    test_sizes: int = 2                 # sizes asked for (--sizes): 1 leaves the second size out
    second_trial: Any = None            # (test pipeline, kernel, report) of the second size, before it runs

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d.pop("second_trial", None)
        d["findings"] = [f.to_dict() for f in self.findings]
        return d


@dataclass
class PreparedVerify:
    """A verification ready to run: the job, or the report that says why there is none."""

    job: J.SimJob | None
    report: VerifyReport
    test: Pipeline | None = None
    second: PreparedVerify | None = None  # the same check at a second size (more tiles on the counted axes)


# ------------------------------------------------------------------------------ jobs
@dataclass(frozen=True)
class Criterion:
    """How outputs are judged: the pack's criterion (verify.toml), the number of input seeds and of
    test sizes. None takes $PYPTO_TUI_VERIFY_TRIALS / $PYPTO_TUI_VERIFY_SIZES, then the pack's: a
    quick run (one seed at one size while iterating, or a smoke pipeline) sets them once."""

    name: str | None = None     # None: the pack's default
    trials: int | None = None   # None: the environment's, then the pack's
    sizes: int | None = None    # None: the environment's, then the pack's (1 or 2)


TRIALS_ENV = "PYPTO_TUI_VERIFY_TRIALS"
SIZES_ENV = "PYPTO_TUI_VERIFY_SIZES"


def _from_env(var: str, flag: str, maximum: int) -> int | None:
    """A whole number from 1 to `maximum` set in the environment, None when unset; a bad one is refused."""
    import os

    raw = os.environ.get(var, "").strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit()) or not 1 <= int(raw) <= maximum:
        raise InputError(f"${var}={raw[:20]!r}: use a whole number from 1 to {maximum} (the default of {flag}), "
                         "or unset it")
    return int(raw)


def resolved_depth(criterion: Criterion, verify_pack: Any) -> tuple[int, int]:
    """(input seeds, test sizes) one verification runs: the flag, the environment, the pack."""
    from pypto_tui.kb import MAX_SIZES, MAX_TRIALS

    trials = criterion.trials if criterion.trials is not None else _from_env(TRIALS_ENV, "--trials", MAX_TRIALS)
    sizes = criterion.sizes if criterion.sizes is not None else _from_env(SIZES_ENV, "--sizes", MAX_SIZES)
    return (trials if trials is not None else verify_pack.trials,
            sizes if sizes is not None else getattr(verify_pack, "sizes", MAX_SIZES))


def _job(test: Pipeline, source: str, task: str, memory_limit_mb: int | None, label: str,
         criterion: Criterion, report: VerifyReport) -> J.SimJob:
    chosen = test.kb.verify.get(criterion.name)
    trials, sizes = resolved_depth(criterion, test.kb.verify)
    if trials < 1:
        raise InputError(f"--trials {trials}: use a whole number >= 1")
    if sizes not in (1, 2):
        raise InputError(f"--sizes {sizes}: use 1 or 2")
    report.criterion, report.criterion_source, report.trials = chosen.name, chosen.source, trials
    report.test_sizes = sizes
    report.tolerances = {k: list(v) for k, v in chosen.tolerances.items()}
    return J.SimJob(kind="verify", kernel_source=source, inputs=tuple(input_specs(test, with_recipe=True)),
                    init_args=tuple(init_args(test)), label=label, task_file=task,
                    criterion=chosen.name, tolerances=dict(chosen.tolerances), trials=trials,
                    cycles_per_us=float(test.kb.chip.cycles_per_us),
                    memory_limit_mb=memory_limit_mb or J.DEFAULT_MEMORY_LIMIT_MB,
                    passes=tuple(test.kb.pass_verify.passes) if test.kb.pass_verify else (),
                    reference=test.kb.pass_verify.reference if test.kb.pass_verify else "tensor_graph",
                    stages=_stage_map(test))


def _stage_map(test: Pipeline) -> dict[str, Any] | None:
    """A module plan's graph (at the test's sizes) and what each kernel writes, so a failing module
    can name the first kernel whose output diverges from its reference intermediate; None for one
    kernel."""
    from pypto_tui.design import module_plan_of

    try:
        planned = module_plan_of(test)
    except InputError:
        return None
    if planned is None:
        return None
    graph, mp = planned
    nodes = {n.id: n for n in graph.nodes}
    return {"graph": graph.to_data(),
            "stages": [{"index": g.index, "ops": ", ".join(nodes[n].op for n in g.nodes if n in nodes),
                        "writes": g.writes} for g in mp.groups]}


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise InputError(f"--scale {scale!r}: use small or full")


def prepare_verify(pipeline: Pipeline, *, scale: str = "small", memory_limit_mb: int | None = None,
                   criterion: Criterion = Criterion(), wiring: bool = False) -> PreparedVerify:
    """The design's kernel at test shapes (the chosen tile, loop count and cube tiles kept
    meaningful, or the change said) and its job. `wiring`: a module at the smallest sizes it builds
    at, its kernels re-planned there (module_test.wiring_test; per_kernel.py verifies each design)."""
    _check_scale(scale)
    c = pipeline.contract()
    if not c.supported or split_by_graph(pipeline) is not None:  # a module of kernels, as task_kernels says
        module = _prepare_module_verify(pipeline, scale, memory_limit_mb, criterion, wiring)
        why = static_refusal(pipeline, c.reason or "this task cannot be scaffolded")  # as contract and scaffold say
        return module or PreparedVerify(None, VerifyReport(False, False, why))
    report = VerifyReport(False, False, "", scale=scale)
    try:
        full_gen = generated_kernel(pipeline)
        if not full_gen.supported:
            report.reason = full_gen.reason
            return PreparedVerify(None, report)
        consts = kernel_constants(full_gen)
        tile_name = tile_constant_name(consts, pipeline.chosen_tile())
        report.design_tile = list(consts[tile_name]) if tile_name else None
        report.design_loop_count = consts.get("LOOP_COUNT")
        if tile_name is None and pipeline.design.tile:
            report.notes.append(f"the generated kernel sets no vec tile, so the tile asked for "
                                f"{fmt_value(pipeline.design.tile)} does not change it")
        if scale == "full":
            test, gen, shapes = pipeline, full_gen, full_shapes(pipeline)
        else:
            test, gen, shapes = _small_test(pipeline, full_gen, consts, tile_name, report)
    except InputError as exc:
        report.reason = str(exc)
        return PreparedVerify(None, report)
    report.shapes = {k: list(v) for k, v in shapes.items()}
    if not gen.supported:
        report.reason = gen.reason
        return PreparedVerify(None, report)
    report.supported = True
    test_consts = kernel_constants(gen)
    report.tile = list(test_consts[tile_name]) if tile_name and tile_name in test_consts else None
    report.loop_count = test_consts.get("LOOP_COUNT")
    if scale == "full":
        report.design_kept = True
    job = _job(test, gen.source, str(test.design.task), memory_limit_mb, Path(str(pipeline.design.task)).name,
               criterion, report)
    return PreparedVerify(job, report, test, _second(report, tile_name, memory_limit_mb, criterion,
                                                     Path(str(pipeline.design.task)).name))


def _second(report: VerifyReport, tile_name: str | None, memory_limit_mb: int | None, criterion: Criterion,
            label: str, source: str | None = None) -> PreparedVerify | None:
    """The second size's verification (another odd tile count on every counted axis), when the
    test found one: `report.second_trial` taken off the report. `source`: a kernel file's text (it
    runs instead of the generated module)."""
    found, report.second_trial = report.second_trial, None
    if found is None:
        return None
    test, gen, extra = found
    extra.supported, extra.kernel, extra.design_kept = True, report.kernel, report.design_kept and extra.design_kept
    consts = kernel_constants(gen)
    if source is None:
        extra.tile = list(consts[tile_name]) if tile_name and tile_name in consts else None
        extra.loop_count = consts.get("LOOP_COUNT")
    else:
        extra.tile, extra.loop_count = report.tile, report.loop_count
    job = _job(test, source if source is not None else gen.source, str(test.design.task), memory_limit_mb,
               label, criterion, extra)
    return PreparedVerify(job, extra, test)


def _prepare_module_verify(pipeline: Pipeline, scale: str, memory_limit_mb: int | None,
                           criterion: Criterion, wiring: bool = False) -> PreparedVerify | None:
    """A chain the planner splits into several kernels: the whole module, at the task's
    size constants made as small as every kernel's design allows (sim/module_test.py). None when
    the task is no module."""
    from pypto_tui.design import kernel_of, module_stages
    from pypto_tui.sim.module_test import module_test, wiring_test

    try:
        designed = module_stages(pipeline)
    except InputError:
        return None
    if designed is None:
        return None
    report = VerifyReport(False, False, "", scale=scale, kernels=max(len(designed.stages), 1))
    try:
        full_gen = kernel_of(pipeline)
        if not full_gen.supported:
            report.reason = full_gen.reason
            return PreparedVerify(None, report)
        if scale == "full":
            test, gen = pipeline, full_gen
        else:
            found = (wiring_test if wiring else module_test)(pipeline, designed)
            test, gen = found.pipeline, found.kernel
            report.design_kept, report.notes = found.kept, list(found.notes)
            report.sizes = {n: list(v) for n, v in found.sizes.items()}
            if not gen.supported:
                report.reason = gen.reason
                return PreparedVerify(None, report)
            why = ("at the test sizes " + ", ".join(f"{n}={b}" for n, (_, b) in found.sizes.items())
                   if found.sizes else "at the task's sizes")
            report.changes = module_differences(full_gen.source, gen.source, why)
            _module_trials(found, report)
            if wiring:
                report.shapes_why = "the smallest sizes the task builds at, each kernel re-planned there (the wiring)"
        report.kernel_designs = kernel_designs(test)
        shapes = full_shapes(test)
    except InputError as exc:
        report.reason = str(exc)
        return PreparedVerify(None, report)
    report.shapes = {k: list(v) for k, v in shapes.items()}
    report.supported = True
    label = Path(str(pipeline.design.task)).name
    job = _job(test, gen.source, str(test.design.task), memory_limit_mb, label, criterion, report)
    return PreparedVerify(job, report, test, _second(report, None, memory_limit_mb, criterion, label))


def _module_trials(found: Any, report: VerifyReport) -> None:
    """A module test's counted axes, why its sizes, and its second size (when it has one) onto the
    report (module_test.ModuleTest)."""
    report.tile_counts = scaled.describe_counts(found.counts)
    report.shapes_why = _sizes_why(found)
    second = found.second
    if second is None or not second.kernel.supported:
        return
    extra = VerifyReport(False, False, "", scale=report.scale, kernels=report.kernels)
    extra.tile_counts, extra.shapes_why = scaled.describe_counts(second.counts), _sizes_why(second)
    extra.sizes = {n: list(v) for n, v in second.sizes.items()}
    extra.shapes = {k: list(v) for k, v in full_shapes(second.pipeline).items()}
    extra.design_kept, extra.notes = second.kept, list(second.notes)
    extra.kernel_designs = kernel_designs(second.pipeline)
    report.second_trial = (second.pipeline, second.kernel, extra)


def _sizes_why(found: Any) -> str:
    counted = "; ".join(f"{a.what} {a.size} = {a.count} tile(s) of {a.step}" for a in found.counts)
    return ("the task's size constants as small as every kernel's design allows" + (f", with {counted}" if counted
                                                                                  else "")
            + (" (odd counts of at least three: no width or count hard-coded into a kernel equals them)"
               if any(a.count >= 3 and a.count % 2 for a in found.counts) else ""))


def _list(t: Sequence[int] | None) -> list[int] | None:
    return list(t) if t else None


def _small_test(pipeline: Pipeline, full_gen: Any, consts: dict[str, Any], tile_name: str | None,
                report: VerifyReport) -> tuple[Pipeline, Any, scaled.Shapes]:
    """The design at reduced shapes, with its own decisions passed explicitly (nothing re-planned
    behind the user's back), and the report's notes and changes."""
    full_keep = design_to_keep(pipeline, full_gen)
    base: Pipeline = pipeline
    sizes: dict[str, tuple[int, int]] = {}
    shapes, keep, notes = small_shapes(pipeline, full_keep)
    size = measure_elements(pipeline)(shapes)
    if full_keep is not None and (keep != full_keep or size > scaled.VERIFY_ELEMENTS):
        resized = _at_smaller_sizes(pipeline, full_keep)
        # Smaller constants when the shapes alone lose the design, or keep it only at a larger test
        # (KernelBench 84, a depthwise conv kept at 128 channels, ran out of 8 GB; at 2 it is small).
        if resized is not None and (keep != full_keep or measure_elements(resized[0])(resized[2][0]) < size):
            base, sizes, (shapes, keep, notes) = resized
    report.notes += notes
    report.sizes = {n: list(v) for n, v in sizes.items()}
    shrunk = shapes
    shapes, first = spread_shapes(base, keep, shapes)
    report.notes += first.notes
    report.tile_counts = scaled.describe_counts(first.axes)
    report.shapes_why = _shapes_why(keep, first)
    test, gen = _test_at(pipeline, full_gen, consts, tile_name, report, base, shapes, keep, full_keep, sizes, notes)
    more, second = spread_shapes(base, keep, shapes, {a.what: a.count for a in first.axes}, shrunk)
    if more != shapes and gen.supported:
        extra = VerifyReport(False, False, "", scale=report.scale)
        extra.tile_counts, extra.shapes_why = scaled.describe_counts(second.axes), _shapes_why(keep, second)
        extra.sizes = dict(report.sizes)
        test2, gen2 = _test_at(pipeline, full_gen, consts, tile_name, extra, base, more, keep, full_keep, sizes,
                               notes)
        if gen2.supported:
            extra.shapes = {k: list(v) for k, v in more.items()}
            report.second_trial = (test2, gen2, extra)
    return test, gen, shapes


def _shapes_why(keep: scaled.DesignToKeep | None, found: scaled.Spread) -> str:
    """Why the test runs at its shapes, in one line for the report."""
    if keep is None:
        return "the inputs shrunk to the verify size: no tile or loop of the design to keep"
    counted = "; ".join(f"{a.what} {a.size} = {a.count} tile(s) of {a.step}" for a in found.axes)
    return (f"the smallest shapes that keep {keep.describe()}" + (f", with {counted}" if counted else "")
            + (" (an odd count of at least three: no width or count hard-coded into a kernel equals it)"
               if any(a.count >= 3 and a.count % 2 for a in found.axes) else ""))


def _test_at(pipeline: Pipeline, full_gen: Any, consts: dict[str, Any], tile_name: str | None,
             report: VerifyReport, base: Pipeline, shapes: scaled.Shapes, keep: scaled.DesignToKeep | None,
             full_keep: scaled.DesignToKeep | None, sizes: dict[str, tuple[int, int]],
             notes: list[str]) -> tuple[Pipeline, Any]:
    """The design's kernel at `shapes` of `base`, its tile, cube tiles and loop given explicitly, and
    the report's changes and whether the design is kept."""
    geometry = geometry_at(base, shapes)
    # The tile the full kernel sets (after any step-down the generator made), passed explicitly.
    tile = tuple(consts[tile_name]) if tile_name else pipeline.chosen_tile()
    if tile is not None and full_keep is not None and geometry is not None:
        full_shape, test_shape = tiled_shapes(pipeline, shapes, full_keep.shape, geometry.shape, base)
        if len(tile) == len(full_shape) == len(test_shape) and not tile_fits(tile, full_shape, test_shape):
            clamped = tuple(min(t, s) for t, s in zip(tile, test_shape, strict=True))
            # a tile clamped to an axis the design tiled with aligned rows is rounded up to 32 bytes: the
            # test must not bring in an unaligned last dimension, which 0.2.0 refuses in a reduction or a
            # concat (KernelBench level-2 92's group norm at (64, 756): lastDimBytes % BLOCK_SIZE)
            if full_shape != tuple(full_keep.shape) or aligned_last(pipeline, tile) == tuple(tile):
                clamped = aligned_last(pipeline, clamped)
            tile = clamped
    cube = {k: list(consts[f"CUBE_{k.upper()}"]) for k in "mkn"} if keep is not None and keep.cube else None
    loop = pipeline.chosen_loop_count() or 1
    if keep is not None and keep.loop_count and geometry is not None:
        loop = scaled.loop_count_at(keep, geometry.shape) or loop
    elif full_keep is not None and full_keep.loop_count and geometry is not None:
        # The loop could not be kept whole: still two iterations (and the tail) where the test shapes
        # allow, not the design's count over a shrunk axis (KernelBench 33: 64 iterations of a
        # (1, 1, 64) tile ran past 20 minutes under pass-verify).
        fitted = tuple(tile) if tile is not None and len(tile) == len(full_keep.shape) else None
        relaxed = replace(full_keep, tile=fitted, cube=None, tile_shape=None, exact_axes=())
        loop = scaled.loop_count_at(relaxed, geometry.shape, fewest=True) or min(loop, 2)
    test = with_shapes(base, shapes, tile=list(tile) if tile else None, loop_count=loop,
                       cube=cube or pipeline.design.cube)
    gen = generated_kernel(test)
    if gen.supported:
        why = ("keeping it needs shapes over the verify limit (see notes)" if notes else
               f"at the test shapes {_fmt_shapes(shapes)}"
               + "".join(f", {n}={b}" for n, (_, b) in sizes.items()))
        test_consts = kernel_constants(gen)
        report.changes = module_differences(full_gen.source, gen.source, why)
        problems = ([] if full_keep is None or geometry is None else
                    scaled.kept_problems(full_keep, geometry.shape, geometry.matmul,
                                         tile_tensor_at(base, full_keep, shapes)))
        kept = full_keep is None or (keep == full_keep and geometry is not None and not problems)
        same = all(consts.get(n) == test_consts.get(n) for n in (tile_name, "CUBE_M", "CUBE_K", "CUBE_N") if n)
        report.design_kept = bool(kept and same)
        if not report.design_kept:
            report.notes += [f"not kept: {p}" for p in problems] or [
                "not kept: the generated kernel's tile or cube constants differ at the test shapes (see changes)"]
    return test, gen


def _at_smaller_sizes(pipeline: Pipeline, full_keep: scaled.DesignToKeep
                      ) -> tuple[Pipeline, dict[str, tuple[int, int]],
                                 tuple[scaled.Shapes, scaled.DesignToKeep | None, list[str]]] | None:
    """The task at smaller size constants when its input shapes alone cannot keep the design within
    the verify limit (a size fixed in `__init__`, two equal sizes): the rewritten task, the constants
    changed, and its test shapes. None when that keeps no more of the design."""
    from pypto_tui.sim.module_test import kernel_task_at_sizes

    found = kernel_task_at_sizes(pipeline, full_keep)
    if found is None:
        return None
    base, sizes = found
    shapes, keep, notes = small_shapes(base, full_keep)
    if keep != full_keep or not graph_lays_out(base, shapes):  # a view's constant offsets pin the old sizes
        return None
    return base, sizes, (shapes, keep, notes)


def module_differences(delivered: str, checked: str, why: str) -> list[str]:
    """Every code line in which the module checked differs from the module delivered (comments and
    docstrings aside): what verify ran is the delivered module but for these lines."""
    from pypto_tui.sim.jobs import code_only

    a = [ln.strip() for ln in code_only(delivered).splitlines()]
    b = [ln.strip() for ln in code_only(checked).splitlines()]
    if a == b:
        return []
    import difflib

    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        old, new = " / ".join(a[i1:i2]) or "(nothing)", " / ".join(b[j1:j2]) or "(nothing)"
        out.append(f"{old} -> {new}: {why}")
    return out


def _fmt_shapes(shapes: scaled.Shapes) -> str:
    return ", ".join(f"{k}={tuple(v)}" for k, v in shapes.items())


def prepare_kernel_verify(pipeline: Pipeline, kernel: Path, *, scale: str = "small",
                          memory_limit_mb: int | None = None, criterion: Criterion = Criterion()) -> PreparedVerify:
    """Any kernel module (exported, edited, hand-written) against the task. The module is read
    statically here; the worker runs it. Test shapes keep the module's declared TILE_SHAPE and
    LOOP_COUNT meaningful when it declares them."""
    _check_scale(scale)
    kfile = read_kernel_file(kernel, len(init_args(pipeline)))
    report = VerifyReport(False, False, "", scale=scale, kernel=str(kernel),
                          tile=_list(kfile.tile), loop_count=kfile.loop_count,
                          design_tile=_list(kfile.tile), design_loop_count=kfile.loop_count)
    if scale == "small" and (not pipeline.contract().supported or split_by_graph(pipeline) is not None):
        chain = _module_kernel_verify(pipeline, kfile, report, memory_limit_mb, criterion)
        if chain is not None:
            return chain
    second: PreparedVerify | None = None
    if scale == "full":
        shapes = full_shapes(pipeline)
    else:
        declared = _declared_design(pipeline, kfile)
        shapes, kept, report.notes = small_shapes(pipeline, declared)
        report.design_kept = declared is None or kept == declared
        shrunk = shapes
        shapes, first = spread_shapes(pipeline, kept, shapes)
        report.notes += first.notes
        report.tile_counts, report.shapes_why = scaled.describe_counts(first.axes), _shapes_why(kept, first)
        more, other = spread_shapes(pipeline, kept, shapes, {a.what: a.count for a in first.axes}, shrunk)
        if more != shapes:
            extra = replace(report, notes=list(report.notes), supported=True,
                            shapes={k: list(v) for k, v in more.items()},
                            tile_counts=scaled.describe_counts(other.axes), shapes_why=_shapes_why(kept, other))
            test2 = with_shapes(pipeline, more)
            second = PreparedVerify(_job(test2, kfile.source, str(pipeline.design.task), memory_limit_mb,
                                         kfile.path.name, criterion, extra), extra, test2)
    test = with_shapes(pipeline, shapes) if scale == "small" else pipeline
    report.shapes = {k: list(v) for k, v in shapes.items()}
    report.supported = True
    job = _job(test, kfile.source, str(pipeline.design.task), memory_limit_mb, kfile.path.name, criterion, report)
    return PreparedVerify(job, report, test, second)


def _module_kernel_verify(pipeline: Pipeline, kfile: KernelFile, report: VerifyReport, memory_limit_mb: int | None,
                          criterion: Criterion) -> PreparedVerify | None:
    """A kernel file for a chain: run it at the sizes the generated module is tested at (the task's
    size constants shrunk as far as every kernel's design allows). The test keeps the file's design
    when its per-kernel constants (TILE_SHAPE_K0, CUBE_M_K1, LOOP_COUNT_K2, ...) are the generated
    module's; every one that differs is named, since those sizes were chosen for the generated
    design. None when the task is no chain."""
    from pypto_tui.design import kernel_of, module_stages
    from pypto_tui.sim.module_test import declared_stages, module_test

    try:
        designed = module_stages(pipeline)
        if designed is None or designed.refused:
            return None
        full_gen = kernel_of(pipeline)
        declared, unapplied = declared_stages(designed, kfile.constants)
        found = module_test(pipeline, declared)
        shapes = full_shapes(found.pipeline)
    except InputError:
        return None
    ours = module_constants(full_gen.source)
    theirs = kfile.constants
    differ = sorted(k for k in ours.keys() & theirs.keys()
                    if _normal(ours[k]) != _normal(theirs[k]) and k[:1].isupper())
    report.kernels = max(len(designed.stages), 1)
    report.kernel_designs = kernel_designs(found.pipeline)
    report.sizes = {n: list(v) for n, v in found.sizes.items()}
    report.notes = list(found.notes) + unapplied + [
        f"the kernel file's {k} = {theirs[k]!r} is not the generated module's {ours[k]!r}: the test sizes are "
        "chosen for the file's value" for k in differ]
    report.design_kept = found.kept and not unapplied
    report.shapes = {k: list(v) for k, v in shapes.items()}
    report.supported = True
    _module_trials(found, report)
    job = _job(found.pipeline, kfile.source, str(found.pipeline.design.task), memory_limit_mb, kfile.path.name,
               criterion, report)
    return PreparedVerify(job, report, found.pipeline,
                          _second(report, None, memory_limit_mb, criterion, kfile.path.name, kfile.source))


def kernel_designs(pipeline: Pipeline) -> list[dict[str, Any]]:
    """Each kernel of a module's tile and loop count as verified (a module has no single pair)."""
    from pypto_tui.design import module_stages

    try:
        designed = module_stages(pipeline)
    except InputError:
        return []
    out: list[dict[str, Any]] = []
    for s in designed.stages if designed is not None else ():
        try:
            tile, count = s.pipeline.chosen_tile(), s.pipeline.chosen_loop_count()
        except InputError:
            tile, count = None, None
        out.append({"kernel": s.index, "ops": s.ops, "tile": list(tile) if tile is not None else None,
                    "loop_count": count})
    return out


def _normal(v: Any) -> Any:
    return list(v) if isinstance(v, tuple | list) else v


def _declared_design(pipeline: Pipeline, kfile: KernelFile) -> scaled.DesignToKeep | None:
    """The design a kernel file declares, as the generator would lay it out for this task (for
    the loop axis and cube tiles); None when the task has no design to compare with."""
    try:
        if not pipeline.contract().supported:
            return None
        g = pipeline.geometry()
        tile = kfile.tile if kfile.tile and len(kfile.tile) == len(g.shape) else None
        cube = {a: kfile.constants.get(f"CUBE_{a.upper()}") for a in "mkn"}
        declared_cube = ({a: list(v) for a, v in cube.items()}  # type: ignore[call-overload]
                         if all(isinstance(v, list | tuple) and v for v in cube.values()) else pipeline.design.cube)
        as_declared = variant(pipeline, tile=list(tile) if tile else pipeline.design.tile,
                              loop_count=kfile.loop_count or 1, cube=declared_cube)
        return design_to_keep(as_declared)
    except InputError:
        return None


def finish_verify(prepared: PreparedVerify, r: J.SimResult) -> VerifyReport:
    """Fold the worker's result into the report: the worst output and the pass check decide."""
    report = replace(prepared.report)
    worst = _worst_output(r.outputs)
    report.passed = bool(r.ok and r.passed)
    report.trials_run, report.inputs_clobbered = r.trials_run, r.inputs_clobbered
    report.kernels_defined, report.kernels_run = r.kernels_defined, r.kernels_run
    report.outside_kernels = list(r.outside_kernels)
    report.first_diverging_kernel = r.first_diverging_kernel
    report.pypto = _pypto_version()
    if report.passed:
        report.reason = (f"every element of every output is within the {report.criterion} tolerance of the torch "
                         f"baseline in {report.trials} trial(s), and all {max(len(r.passes_checked) - 1, 0)} "
                         "compiler passes agree with it")
    else:
        report.reason = str((worst.get("reason") if worst and not worst.get("passed", True) else None)
                            or r.reason or r.error or r.status)
        if r.divergence:
            report.reason += f"; {r.divergence}"
        if r.status == J.COMPILE_ERROR:
            from pypto_tui.sim.compile_failure import describe

            known = prepared.test.kb.verify if prepared.test is not None else None
            report.reason = describe(report.reason, r.failed_kernel, report.kernel_designs, known)
            report.failed_kernel = dict(r.failed_kernel) if r.failed_kernel else None
    report.status, report.wall_s, report.outputs, report.peak_rss_mb = r.status, r.wall_s, r.outputs, r.peak_rss_mb
    for key in PASS_FIELDS:
        value = getattr(r, key)
        setattr(report, key, list(value) if isinstance(value, list) else value)
    if worst:
        report.max_abs_err, report.max_rel_err = worst.get("max_abs_err"), worst.get("max_rel_err")
        report.fail_share = worst.get("fail_share")
    if r.status == J.ERROR and report.kernel != "generated" and report.scale == "small":
        report.notes.append("if the kernel only accepts the task's own shapes, verify it with --scale full")
    if r.status in (J.TIMEOUT, J.CRASHED) and report.scale == "full":
        size = sum(math.prod(s) for s in report.shapes.values())
        report.notes.append(f"the task's own shapes ({size} input elements) are too much for the interpreter "
                            "with every pass on this machine: --scale small keeps the tile and loop count at "
                            "smaller shapes")
    return report


def verify_many(pipelines: Sequence[Pipeline], *, scale: str = "small", jobs: int = 2, timeout_s: float = 600.0,
                cache: bool = True, memory_limit_mb: int | None = None, progress: Progress | None = None,
                status: Status | None = None, kernels: Sequence[Path | None] | None = None,
                criterion: Criterion = Criterion()) -> list[VerifyReport]:
    """Verify several designs (or, where `kernels` gives a file, that kernel against the design's
    task), their workers running in parallel up to `jobs`."""
    from pypto_tui.sim.runner import run_many

    files = list(kernels) if kernels is not None else [None] * len(pipelines)
    prepared = [prepare_kernel_verify(p, k, scale=scale, memory_limit_mb=memory_limit_mb, criterion=criterion)
                if k is not None else prepare_verify(p, scale=scale, memory_limit_mb=memory_limit_mb,
                                                     criterion=criterion)
                for p, k in zip(pipelines, files, strict=True)]
    runnable = [x for x in prepared if x.job is not None]
    results = iter(run_many([x.job for x in runnable if x.job], jobs=jobs, timeout_s=timeout_s, cache=cache,
                            progress=progress, status=status)) if runnable else iter(())
    reports = [finish_verify(x, next(results)) if x.job is not None else x.report for x in prepared]
    # The second size runs only where the first passed: a failure is already the verdict.
    again = [(i, x.second) for i, (x, r) in enumerate(zip(prepared, reports, strict=True))
             if x.second is not None and wants_second_size(x, r)]
    seconds = run_many([s.job for _, s in again if s.job], jobs=jobs, timeout_s=timeout_s, cache=cache,
                       progress=progress, status=status) if again else []
    done = {i: finish_verify(s, r) for (i, s), r in zip(again, seconds, strict=True)}
    for i, r in enumerate(reports):
        if prepared[i].job is not None:
            with_second_size(r, done.get(i))
    return reports


def wants_second_size(prepared: PreparedVerify, first: VerifyReport) -> bool:
    """Whether the second size runs: the first passed, the test found one, and it was asked for (a
    report of one size asked says the second was left out)."""
    if not first.passed or prepared.second is None or prepared.second.job is None:
        return False
    if first.test_sizes < 2:
        first.notes.append("one test size (--sizes 1): the second, at another tile count, was not run, so a "
                           "width hard-coded to this one could pass")
        return False
    return True


def _trial(r: VerifyReport, n: int) -> dict[str, Any]:
    return {"trial": n, "shapes": r.shapes, "sizes": r.sizes, "tile_counts": r.tile_counts, "why": r.shapes_why,
            "tile": r.tile, "loop_count": r.loop_count, "passed": r.passed, "status": r.status, "reason": r.reason,
            "wall_s": r.wall_s, "peak_rss_mb": r.peak_rss_mb}


def with_second_size(report: VerifyReport, second: VerifyReport | None) -> VerifyReport:
    """Fold the second size's verdict into the report: both must pass. `size_trials` lists every
    size tried; a failure at the second size becomes the report's verdict, its reason saying where."""
    report.size_trials = [_trial(report, 1)] + ([_trial(second, 2)] if second is not None else [])
    if second is None:
        return report
    report.wall_s = (report.wall_s or 0.0) + (second.wall_s or 0.0)
    peaks = [p for p in (report.peak_rss_mb, second.peak_rss_mb) if p is not None]
    report.peak_rss_mb = max(peaks) if peaks else None
    where = _fmt_shapes({k: tuple(v) for k, v in second.shapes.items()}) + "".join(
        f", {n}={b}" for n, (_, b) in second.sizes.items())
    if second.passed:
        report.reason += f"; so it is at a second size ({where})"
        return report
    report.passed = False
    report.reason = f"at the second test size ({where}): {second.reason}"
    report.status, report.outputs = second.status, second.outputs
    report.max_abs_err, report.max_rel_err = second.max_abs_err, second.max_rel_err
    report.fail_share = second.fail_share
    for key in PASS_FIELDS:
        setattr(report, key, getattr(second, key))
    return report


def verify(pipeline: Pipeline, *, scale: str = "small", timeout_s: float = 600.0, cache: bool = True,
           memory_limit_mb: int | None = None, progress: Progress | None = None, status: Status | None = None,
           kernel: Path | None = None, criterion: Criterion = Criterion()) -> VerifyReport:
    """Build the kernel at test shapes (or take `kernel`), run it through the interpreter and
    every compiler pass it checks, and compare with torch."""
    return verify_many([pipeline], scale=scale, jobs=1, timeout_s=timeout_s, cache=cache,
                       memory_limit_mb=memory_limit_mb, progress=progress, status=status, kernels=[kernel],
                       criterion=criterion)[0]


def _pypto_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pypto")
    except PackageNotFoundError:
        return None


def _worst_output(outputs: list[dict[str, Any]]) -> dict[str, Any] | None:
    if not outputs:
        return None
    return max(outputs, key=lambda o: (not o.get("passed", False), o.get("fail_share") or 0.0,
                                       o.get("max_rel_err") or 0.0))
