"""`tile` and `loop`: one-shot calculations. Thin: parse, call the core, print.

Neither command imports textual or libcst unless a task file is given (then libcst reads it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pypto_tui.cli.common import (
    Exit,
    FrontEndOption,
    JsonOption,
    KbOption,
    KernelIndexOption,
    SubmoduleOption,
    TraceTimeoutOption,
    emit_json,
    handles_input_errors,
    load_kb,
    use_front_end,
)
from pypto_tui.errors import InputError
from pypto_tui.findings import has_error
from pypto_tui.shapes import MAX_DIM, parse_dims

TaskArg = Annotated[
    Path | None,
    typer.Argument(help="A KernelBench task file: shape, dtype and reduce dim come from its dimension plan.",
                   show_default=False),
]
ShapeOpt = Annotated[str | None, typer.Option("--shape", help="Tensor shape, e.g. 16,256,256.", show_default=False)]
DtypeOpt = Annotated[str | None, typer.Option("--dtype", help="fp32, fp16, bf16, int8, ... (default fp32).",
                                              show_default=False)]
ReduceOpt = Annotated[int | None, typer.Option("--reduce-dim", help="The axis the op reduces (negative ok).",
                                               show_default=False)]
TileOpt = Annotated[str | None, typer.Option("--tile", help="A tile to evaluate, e.g. 1,16,256.", show_default=False)]
FamilyOpt = Annotated[str | None, typer.Option("--family", help="The operator family (softmax, norm, ...) whose cost "
                                               "estimate prices the candidates (a task file gives its own).",
                                               show_default=False)]


def _emit(shown, json_out: bool, to_dict, show, failed: bool, front_end: str | None = None) -> None:  # type: ignore[no-untyped-def]
    """`shown`: [(kernel, result)]. One kernel: its result's document as it always was; a chain's
    kernels: {"kernels": [{index, ops, submodule, ...}]} and a table under each kernel's heading. With a
    task file, the document also names the front end that read it (`front_end`)."""
    if json_out:
        doc = to_dict(shown[0][1]) if len(shown) == 1 and shown[0][0] is None else {"kernels": [
            {**kernel.where(), **to_dict(result)} for kernel, result in shown]}
        if front_end is not None:
            doc["front_end"] = front_end
        emit_json(doc)
    else:
        for kernel, result in shown:
            if kernel is not None:
                from pypto_tui.cli import views

                views.heading(kernel.heading())
            show(result)
    raise typer.Exit(Exit.FINDINGS if failed else Exit.OK)


def _costs(task: Path | None, family: str | None, shape, dtype: str, reduce_dim: int | None, kb):  # type: ignore[no-untyped-def]
    """The cost estimate for these candidates (SIM.cost-estimate), or None and why not."""
    if task is None and family is None:  # before any import: the plain `tile` one-shot prices nothing
        return None, "no family: give a task file or --family to price the candidates with the cost estimate"
    from pypto_tui.design_estimate import design_costs
    from pypto_tui.plan import Needs, TileRole
    from pypto_tui.vocabulary import FAMILIES

    if task is not None:
        from pypto_tui.design import Design, Pipeline

        p = Pipeline(kb, Design(task=str(task)))
        role = p.needs().tiles[0]
        if (tuple(shape), dtype, reduce_dim) != (role.shape, role.dtype, role.reduce_dim):
            return None, "the estimate prices the task's own shape, dtype and reduce axis, which the flags changed"
        return p.costs(), ""
    if family is None:
        return None, "no family: give a task file or --family to price the candidates with the cost estimate"
    if family not in FAMILIES:
        raise InputError(f"--family {family!r}: use one of {', '.join(FAMILIES)}")
    return design_costs(kb, family, None, Needs((TileRole("main", "TILE_SHAPE", tuple(shape), dtype, reduce_dim),))), ""


def _geometry(task: Path | None, shape: str | None, dtype: str | None, reduce_dim: int | None, kb):  # type: ignore[no-untyped-def]
    """Shape/dtype/reduce dim from the flags, or from a task file's dimension plan."""
    if task is not None:
        if shape is not None:
            raise InputError("give either a task file or --shape, not both")
        from pypto_tui.design import task_geometry

        g = task_geometry(task, kb)
        return g.shape, dtype or g.dtype, g.reduce_dim if reduce_dim is None else reduce_dim, g.why
    if shape is None:
        raise InputError("no shape: give --shape 16,256,256 (or a task file)")
    return parse_dims(shape), dtype or "fp32", reduce_dim, "auto"


@handles_input_errors
def tile(
    task: TaskArg = None,
    shape: ShapeOpt = None,
    dtype: DtypeOpt = None,
    reduce_dim: ReduceOpt = None,
    tile: TileOpt = None,
    family: FamilyOpt = None,
    top: Annotated[int, typer.Option("--top", help="How many ranked candidates to list.", min=1)] = 10,
    candidates: Annotated[bool | None, typer.Option(
        "--candidates/--no-candidates",
        help="Rank candidates too (default: yes without --tile, no with it, which keeps it numpy-free).",
        show_default=False)] = None,
    kernel_index: KernelIndexOption = None,
    submodule: SubmoduleOption = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Evaluate a tile (--tile) or rank the candidate tiles for a shape (rules P4, O1)."""
    from pypto_tui.tiles import evaluate_tile, rank_candidates

    pack = load_kb(kb)
    want_candidates = (tile is None) if candidates is None else candidates
    if tile is None and not want_candidates:
        raise InputError("--no-candidates without --tile leaves nothing to show: give --tile 1,16,256 "
                         "(or drop --no-candidates)")
    if task is not None and shape is None and dtype is None and reduce_dim is None:
        front_end = use_front_end(task, pack, front_end, trace_timeout)
        _tile_task(task, pack, tile, top, want_candidates, (kernel_index, submodule), json_out, front_end)
    if front_end != "static":
        raise InputError("--front-end reads a task file: give the task (without --shape, --dtype or --reduce-dim)")
    _no_kernel_pick(kernel_index, submodule, "--shape, --dtype or --reduce-dim")
    shp, dt, rd, _why = _geometry(task, shape, dtype, reduce_dim, pack)
    pack.dtype_bytes(dt)
    plan = None
    if want_candidates:
        costs, why = _costs(task, family, shp, dt, rd, pack)
        plan = rank_candidates(pack, shp, dt, rd, top=top, estimate=costs.tile if costs else None,
                               estimate_decides=costs.tiles.estimate_decides if costs else None,
                               ranking_note=costs.tiles.why if costs else "",
                               estimate_note=costs.note if costs else why)
    _emit_tiles([(None, (plan, evaluate_tile(pack, shp, dt, tile, rd) if tile is not None else None))], json_out)


def _no_kernel_pick(kernel_index: int | None, submodule: str | None, flags: str) -> None:
    """--kernel-index and --submodule pick a kernel of a task file: without one they mean nothing."""
    for given, option in ((kernel_index, "--kernel-index"), (submodule, "--submodule")):
        if given is not None:
            raise InputError(f"{option} picks a kernel of a task file: give the task (without {flags})")


def _task_pipelines(task: Path, pack, picked, front_end):  # type: ignore[no-untyped-def]
    from pypto_tui.cli.kernel_pick import task_pipelines

    kernel_index, submodule = picked
    return task_pipelines(task, pack, kernel_index, submodule, front_end)


def _tile_task(task: Path, pack, tile, top, want_candidates, picked, json_out, front_end="static"):  # type: ignore[no-untyped-def]
    """`tile TASK`: each kernel's main tile ranked exactly as the design's tile step ranks it."""
    from pypto_tui.tiles import evaluate_tile

    shown = []
    for kernel, p in _task_pipelines(task, pack, picked, front_end):
        role = p.needs().tiles[0]
        plan = p.tile_plan(top=top) if want_candidates else None
        evaluation = evaluate_tile(pack, role.shape, role.dtype, tile, role.reduce_dim) if tile is not None else None
        shown.append((kernel, (plan, evaluation)))
    _emit_tiles(shown, json_out, front_end)


def _emit_tiles(shown, json_out: bool, front_end: str | None = None) -> None:  # type: ignore[no-untyped-def]
    def to_dict(result):  # type: ignore[no-untyped-def]
        plan, evaluation = result
        doc = plan.to_dict() if plan else {
            "shape": list(evaluation.shape), "dtype": evaluation.dtype, "reduce_dim": evaluation.reduce_dim,
            "candidates": [], "recommended": None}
        doc["evaluation"] = evaluation.to_dict() if evaluation else None
        return doc

    def show(result):  # type: ignore[no-untyped-def]
        from pypto_tui.cli import views

        views.show_tiles(*result)

    failed = any(has_error(e.findings) if e else (p is None or p.recommended is None) for _, (p, e) in shown)
    _emit(shown, json_out, to_dict, show, failed, front_end)


@handles_input_errors
def loop(
    task: TaskArg = None,
    shape: ShapeOpt = None,
    dtype: DtypeOpt = None,
    tile: TileOpt = None,
    family: FamilyOpt = None,
    axis: Annotated[int, typer.Option("--axis", help="The loop axis (the outermost, 0, unless you must).")] = 0,
    loop_count: Annotated[int | None, typer.Option("--loop-count", help="Evaluate this loop count first.",
                                                   max=MAX_DIM, show_default=False)] = None,
    matmul: Annotated[bool, typer.Option("--matmul", help="The axis is a matmul's M axis (always loops).")] = False,
    kernel_index: KernelIndexOption = None,
    submodule: SubmoduleOption = None,
    kb: KbOption = None,
    json_out: JsonOption = False,
    front_end: FrontEndOption = "static",
    trace_timeout: TraceTimeoutOption = 300.0,
) -> None:
    """Plan the loop: whether one is needed, and loop_count candidates on the log scale (rules P6, O2)."""
    from pypto_tui.loops import plan_loops
    from pypto_tui.tiles import rank_candidates

    pack = load_kb(kb)
    if task is not None and shape is None and dtype is None:
        front_end = use_front_end(task, pack, front_end, trace_timeout)
        _loop_task(task, pack, tile, loop_count, (kernel_index, submodule), json_out, front_end)
    if front_end != "static":
        raise InputError("--front-end reads a task file: give the task (without --shape or --dtype)")
    _no_kernel_pick(kernel_index, submodule, "--shape or --dtype")
    shp, dt, rd, why = _geometry(task, shape, dtype, None, pack)
    if matmul:
        why = "matmul"
    if tile is None:
        if task is None:
            raise InputError("no tile: give --tile 1,4096 (`pypto-tui tile` ranks candidates)")
        best = rank_candidates(pack, shp, dt, rd, top=1).recommended
        if best is None:
            raise InputError("no legal tile for this shape: pick one with --tile")
        tile_dims = best.tile
    else:
        tile_dims = parse_dims(tile, "tile")
    costs, why_not = _costs(task, family, shp, dt, rd, pack)
    price = None
    if costs is not None and costs.estimator is not None:
        from pypto_tui.design_estimate import loop_cost
        from pypto_tui.plan import TileRole

        price = loop_cost(pack, costs.estimator, TileRole("main", "TILE_SHAPE", tuple(shp), dt, rd), tuple(tile_dims),
                          axis, costs.op)
    plan = plan_loops(pack, shp, dt, tile_dims, axis, loop_count, why, price, costs.note if costs else why_not,
                      estimate_decides=costs.loops.estimate_decides if costs else None,
                      ranking_note=costs.loops.why if costs else "")
    _emit_loops([(None, plan)], json_out)


def _loop_task(task: Path, pack, tile, loop_count, picked, json_out, front_end="static"):  # type: ignore[no-untyped-def]
    """`loop TASK`: each kernel's loop planned exactly as the design's loop step plans it (its loop
    axis, unit and chunk limits), for its recommended tile or --tile."""
    changes: dict[str, object] = {}
    if tile is not None:
        changes["tile"] = list(parse_dims(tile, "tile"))
    if loop_count is not None:
        changes["loop_count"] = loop_count
    shown = []
    for kernel, p in _task_pipelines(task, pack, picked, front_end):
        if changes:
            p = p.with_design(**changes)
        plan = p.loop_plan()
        if plan is None:
            p.tile_plan()  # an impossible shape says why here
            p.tile_choices()
            where = kernel.heading() if kernel is not None else task.name
            raise InputError(f"{where}: no legal tile, so no loop to plan: pick one with --tile")
        shown.append((kernel, plan))
    _emit_loops(shown, json_out, front_end)


def _emit_loops(shown, json_out: bool, front_end: str | None = None) -> None:  # type: ignore[no-untyped-def]
    def show(plan):  # type: ignore[no-untyped-def]
        from pypto_tui.cli import views

        views.show_loops(plan)

    failed = any(plan.recommended is None or has_error(plan.recommended.findings) for _, plan in shown)
    _emit(shown, json_out, lambda plan: plan.to_dict(), show, failed, front_end)
