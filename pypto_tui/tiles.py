"""The tile calculator (rules P4, O1): evaluate one tile live, or rank every candidate.

Two paths on purpose. `evaluate_tile` is plain Python: it runs on every keystroke in the app and
must stay in tens of microseconds, where numpy's per-call overhead would dominate. `rank_candidates`
ranks the whole candidate space (tile_space: plain Python for the usual few hundred tiles, numpy for
a 4-D shape's hundreds of thousands) and only builds full evaluations for the rows it returns.

Every number a check compares against comes from the knowledge pack, and every finding cites the
rule (and so whose limit it is: the compiler's, PyPTO's documentation, or the rule documents').
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pypto_tui.errors import InputError
from pypto_tui.estimate import TileCost, reorder
from pypto_tui.examples import ex, examples
from pypto_tui.findings import Finding, cites, has_error, rule_finding
from pypto_tui.kb import KnowledgeBase
from pypto_tui.plan import CubeChoice, CubeEvaluation, TileChoice, TileEvaluation, TileRole, TileSource
from pypto_tui.shapes import Shape, auto_tiles, ceil_div, check_shape, fmt_dims, normalise_axis, parse_tile_for
from pypto_tui.tile_space import axis_values as axis_values  # re-exported: it lived here
from pypto_tui.tile_space import rank_space


@dataclass(frozen=True, slots=True)
class Candidate:
    rank: int
    evaluation: TileEvaluation
    qualified: bool
    reasons: tuple[str, ...]
    preset: bool = False
    rules_rank: int | None = None      # its place in the documents' order (rank follows the pack's ranking)
    estimate_us: float | None = None   # the cost estimate (SIM.cost-estimate), qualified tiles only

    @property
    def tile(self) -> Shape:
        return self.evaluation.tile

    def to_dict(self) -> dict[str, Any]:
        d = self.evaluation.to_dict()
        d.update(rank=self.rank, qualified=self.qualified, preset=self.preset, reasons=list(self.reasons),
                 rules_rank=self.rules_rank, estimate_us=self.estimate_us)
        return d


@dataclass(frozen=True)
class TilePlan:
    shape: Shape
    dtype: str
    reduce_dim: int | None
    candidates: tuple[Candidate, ...]
    recommended: Candidate | None
    enumerated: int
    qualified_count: int
    below_1kb_fallback: bool
    notes: tuple[str, ...] = field(default=())
    best_by_rules: Candidate | None = None
    best_by_estimate: Candidate | None = None
    ranking: str = "rules"             # which order `recommended` follows: "rules" or "estimate"
    estimate_note: str = ""            # why there is no estimate, or which fit priced the tiles
    ranking_note: str = ""             # why that order decides (the pack's switch, the measured picks)

    def rules_pick_loss(self) -> float | None:
        """How much slower the estimate expects the documents' pick than its own (1.0: the same)."""
        return pick_loss(self.best_by_rules, self.best_by_estimate)

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_by_rules": self.best_by_rules.to_dict() if self.best_by_rules else None,
            "best_by_estimate": self.best_by_estimate.to_dict() if self.best_by_estimate else None,
            "ranking": self.ranking,
            "estimate_note": self.estimate_note,
            "ranking_note": self.ranking_note,
            "rules_pick_rules": list(cited_rules(self.best_by_rules.reasons)) if self.best_by_rules else [],
            "rules_pick_expected_loss": self.rules_pick_loss(),
            "shape": list(self.shape),
            "dtype": self.dtype,
            "reduce_dim": self.reduce_dim,
            "candidates": [c.to_dict() for c in self.candidates],
            "recommended": self.recommended.to_dict() if self.recommended else None,
            "enumerated": self.enumerated,
            "qualified": self.qualified_count,
            "below_1kb_fallback": self.below_1kb_fallback,
            "notes": list(self.notes),
        }


# ------------------------------------------------------------------------------------ helpers
_RULE_ID = re.compile(r"\b([A-Z][A-Z0-9]*\.[a-z0-9][a-z0-9-]*)\b")


def cited_rules(texts: Sequence[str]) -> tuple[str, ...]:
    """The rule ids a pick's reasons cite, in order, each once (what the documents' pick rests on)."""
    return tuple(dict.fromkeys(m for t in texts for m in _RULE_ID.findall(t) if m != "SIM.cost-estimate"))


def pick_loss(rules: Any, estimate: Any) -> float | None:
    """estimate_us of the documents' pick / estimate_us of the estimate's (None unless both priced)."""
    if rules is None or estimate is None or not rules.estimate_us or not estimate.estimate_us:
        return None
    return float(rules.estimate_us / estimate.estimate_us)


def _ok(kb: KnowledgeBase, rule: str, message: str) -> Finding:
    return rule_finding(kb, rule, message, "ok")


def align_unit(kb: KnowledgeBase, dtype: str) -> int:
    """Smallest element count whose bytes are a multiple of the alignment (fp32: 8, fp16: 16)."""
    b = kb.dtype_bytes(dtype)
    a = kb.limits.last_dim_align_bytes
    return a // math.gcd(a, b)


def ub_estimate(kb: KnowledgeBase, prod: int, dtype: str, reducing: bool) -> int:
    """Bytes one op of this tile holds in the unified buffer (measured model, see chip.toml)."""
    raw = prod * kb.dtype_bytes(dtype)
    if reducing:
        return int(raw * kb.chip.reduce_ub_factor) + kb.chip.reduce_ub_extra_bytes
    return int(raw * kb.chip.elementwise_ub_factor)


# ------------------------------------------------------------------------------------ checks
@examples(valid=[ex(shape=(16, 256, 256, 8))],
          invalid=[ex(shape=(2, 4, 8, 16, 32), message="rank 5 > 4")])
@cites("P4.vec-rank-max")
def check_vec_rank(kb: KnowledgeBase, shape: Shape) -> Finding | None:
    if len(shape) > kb.limits.max_vec_rank:
        return rule_finding(kb, "P4.vec-rank-max",
                        f"rank {len(shape)} > {kb.limits.max_vec_rank}: set_vec_tile_shapes takes at most "
                        f"{kb.limits.max_vec_rank} sizes; merge axes with a reshape in forward")
    return None


@examples(valid=[ex(prod=16384), ex(prod=1)],
          invalid=[ex(prod=16385, message="16385 > 16384")])
@cites("P4.tile-budget", "CL.limits")
def check_prod_budget(kb: KnowledgeBase, prod: int) -> Finding:
    cap = kb.limits.max_elements
    if prod > cap:
        return rule_finding(kb, "P4.tile-budget", f"prod(tile) = {prod} > {cap}: shrink the tile "
                        f"(step down {' -> '.join(map(str, kb.ladders.ub_step_down))})")
    return _ok(kb, "P4.tile-budget", f"prod(tile) = {prod} <= {cap}")


@examples(valid=[ex(auto_tiles=2048)],
          invalid=[ex(auto_tiles=2049, message="needs a loop")])
@cites("P4.auto-tiles", "CL.limits")
def check_auto_tiles(kb: KnowledgeBase, auto_tiles: int) -> Finding:
    cap = kb.limits.max_auto_tiles
    if auto_tiles > cap:
        return rule_finding(kb, "P4.auto-tiles", f"auto_tiles = {auto_tiles} > {cap}: the op needs a loop "
                        f"(P6; `pypto-tui loop` plans one) before the tile is tuned further")
    return _ok(kb, "P4.auto-tiles", f"auto_tiles = {auto_tiles} <= {cap}: no loop needed for tile count")


@examples(valid=[ex(shape=(16, 256), tile=(1, 8), dtype="fp32"), ex(shape=(16, 256), tile=(1, 16), dtype="fp16"),
                 ex(shape=(4, 9, 600), tile=(4, 9, 64), dtype="fp32", strict=True)],
          invalid=[ex(shape=(16, 256), tile=(1, 7), dtype="fp32", message="use 8"),
                   ex(shape=(16, 3), tile=(1, 3), dtype="fp32", message="shorter than 32 B"),
                   ex(shape=(4, 9, 600), tile=(4, 9, 100), dtype="fp32", strict=True, rule="HW.concat-reduce-align",
                      message="refuses a concat or a reduction")])
@cites("P4.last-dim-align", "HW.concat-reduce-align")
def check_last_dim_align(kb: KnowledgeBase, shape: Shape, tile: Shape, dtype: str, strict: bool = False) -> Finding:
    """The last tile dim's bytes against the 32-byte rule: PyPTO's documented rule (a warning) in
    general; for ops the 0.2.0 compiler checks it on (concat, reductions: `strict`), an error."""
    b = kb.dtype_bytes(dtype)
    unit = align_unit(kb, dtype)
    a = kb.limits.last_dim_align_bytes
    last = tile[-1]
    if (last * b) % a == 0:
        return _ok(kb, "P4.last-dim-align", f"last tile dim {last} x {b} B = {last * b} B is {a}-byte aligned")
    up = ceil_div(last, unit) * unit
    down = (last // unit) * unit
    hint = f"use {down} or {up}" if down > 0 else f"use {up}"
    if last > shape[-1]:  # past the axis: the nearest aligned sizes would be past it too
        cover = ceil_div(shape[-1], unit) * unit
        below = (shape[-1] // unit) * unit
        hint = f"the axis is {shape[-1]} long: use {cover}" + (
            " (the whole axis)" if cover == shape[-1]
            else f" ({cover - shape[-1]} padding element(s))" + (f" or {below}" if below > 0 else ""))
    elif shape[-1] < unit or ((shape[-1] * b) % a and up > shape[-1] and down == 0):
        hint = (f"the whole axis ({shape[-1]}) is shorter than {a} B: use {up} and accept "
                f"{up - shape[-1]} padding element(s)")
    if strict:
        return rule_finding(kb, "HW.concat-reduce-align",
                            f"last tile dim {last} x {b} B = {last * b} B is not a multiple of {a} B: {hint}; "
                            "pypto 0.2.0 refuses a concat or a reduction with it (lastDimBytes % BLOCK_SIZE)")
    return rule_finding(kb, "P4.last-dim-align",
                    f"last tile dim {last} x {b} B = {last * b} B is not a multiple of {a} B: {hint} "
                    f"(pypto 0.2.0's CPU simulator accepts it; the NPU code generator does not)")


@examples(valid=[ex(ub_bytes=196608, reducing=False)],
          invalid=[ex(ub_bytes=196640, reducing=True, message="196640 B")])
@cites("HW.ub-capacity", "O1.ub-step-down")
def check_ub_capacity(kb: KnowledgeBase, ub_bytes: int, reducing: bool) -> Finding:
    cap = kb.chip.ub_bytes
    what = "a reducing op holds ~1.5x its tile" if reducing else "an elementwise op holds its tile"
    if ub_bytes > cap:
        return rule_finding(kb, "HW.ub-capacity",
                        f"~{ub_bytes} B in the unified buffer > {cap} B ({what}): the compiler will refuse it; "
                        f"step prod(tile) down {' -> '.join(map(str, kb.ladders.ub_step_down))}")
    return _ok(kb, "HW.ub-capacity", f"~{ub_bytes} B of {cap} B unified buffer ({what})")


@examples(valid=[ex(shape=(16, 256), tile=(16, 256), dtype="fp32"),
                 ex(shape=(16, 10), tile=(1, 16), dtype="fp32")],
          invalid=[ex(shape=(16, 256), tile=(32, 256), dtype="fp32", message="axis 0: tile 32 > shape 16")])
@cites("P4.no-waste", "O1.no-effective-credit")
def check_no_waste(kb: KnowledgeBase, shape: Shape, tile: Shape, dtype: str) -> list[Finding]:
    unit = align_unit(kb, dtype)
    out: list[Finding] = []
    for axis, (s, t) in enumerate(zip(shape, tile, strict=True)):
        if t <= s:
            continue
        forced = axis == len(shape) - 1 and t == ceil_div(s, unit) * unit and s % unit
        if forced:
            out.append(rule_finding(kb, "P4.no-waste", f"axis {axis}: tile {t} > shape {s}, forced by 32-byte "
                                f"alignment ({t - s} padding element(s))", "info"))
        else:
            extra = " (and no 'effective' contiguity credit: O1)" if axis == len(shape) - 1 else ""
            out.append(rule_finding(kb, "P4.no-waste", f"axis {axis}: tile {t} > shape {s} wastes "
                                f"{t // s if t % s == 0 else round(t / s, 2)}x the budget on that axis{extra}"))
    if not out:
        out.append(_ok(kb, "P4.no-waste", "every tile dim fits its axis"))
    return out


@examples(valid=[ex(shape=(16, 256, 256), tile=(1, 16, 256), dtype="fp32"),
                 ex(shape=(64, 100), tile=(64, 104), dtype="fp32")],
          invalid=[ex(shape=(16, 256, 256), tile=(1, 256, 64), dtype="fp32", message="256 B < 1024 B")])
@cites("O1.contiguous-1kb", "CL.contiguous-first", "O1.no-effective-credit")
def check_contiguous(kb: KnowledgeBase, shape: Shape, tile: Shape, dtype: str) -> Finding:
    b = kb.dtype_bytes(dtype)
    need = kb.limits.contiguous_bytes
    got = tile[-1] * b
    if got >= need:
        return _ok(kb, "O1.contiguous-1kb", f"contiguous run {tile[-1]} x {b} B = {got} B >= {need} B")
    if shape[-1] * b < need:
        return rule_finding(kb, "O1.contiguous-1kb",
                        f"contiguous run {got} B < {need} B, but the whole last axis is only {shape[-1] * b} B: "
                        f"1 KB cannot be reached here, so compare reduce segments and measure", "info")
    return rule_finding(kb, "O1.contiguous-1kb",
                    f"contiguous run {tile[-1]} x {b} B = {got} B < {need} B: raise the last tile dim to "
                    f">= {ceil_div(need, b)} elements first")


@examples(valid=[ex(shape=(16, 256, 256), tile=(1, 16, 256), rd=1), ex(shape=(16, 256), tile=(8, 256), rd=None)],
          invalid=[ex(shape=(16, 256, 256), tile=(4, 1, 256), rd=1, message="reduce axis 1 gets tile 1")])
@cites("O1.reduce-axis-used")
def check_reduce_axis_used(kb: KnowledgeBase, shape: Shape, tile: Shape, rd: int | None) -> Finding | None:
    if rd is None or rd == len(shape) - 1 or tile[rd] > 1 or shape[rd] == 1:
        return None
    beside = [i for i in range(len(shape) - 1) if i != rd and tile[i] > 1]
    if beside:
        return rule_finding(kb, "O1.reduce-axis-used",
                        f"reduce axis {rd} gets tile 1 ({shape[rd]} segments) while axis "
                        f"{', '.join(map(str, beside))} is tiled: spend the tile on the reduce axis")
    return None


@examples(valid=[ex(shape=(16, 256, 256), tile=(1, 32, 256), rd=1, segments=8),
                 ex(shape=(16, 256, 256), tile=(2, 256, 32), rd=1, segments=1)],
          invalid=[ex(shape=(16, 256, 256), tile=(2, 16, 256), rd=1, segments=16, message="2x of the budget")])
@cites("O1.no-nonreduce-spend")
def check_nonreduce_spend(kb: KnowledgeBase, shape: Shape, tile: Shape, rd: int | None,
                          segments: int | None) -> Finding | None:
    if rd is None or not segments or segments <= 1:
        return None
    last = len(shape) - 1
    spend = math.prod(t for i, t in enumerate(tile) if i not in (rd, last))
    if spend > 1:
        return rule_finding(kb, "O1.no-nonreduce-spend",
                        f"{spend}x of the budget goes to non-reduce axes while the reduce axis is still in "
                        f"{segments} segments: fewer segments first")
    return None


@cites("O1.reduce-sweet-spot")
@examples(valid=[ex(shape=(16, 256), tile=(1, 256), rd=1), ex(shape=(16, 256, 256), tile=(1, 256, 256), rd=None)],
          invalid=[ex(shape=(16, 256, 256), tile=(1, 16, 256), rd=1, message="#1 in the 16 -> 32 -> 64 order")])
def check_sweet_spot(kb: KnowledgeBase, shape: Shape, tile: Shape, rd: int | None) -> Finding | None:
    """Where the reduce-axis tile sits on the pack's 16 -> 32 -> 64 ladder: measure its neighbours."""
    if rd is None or rd == len(shape) - 1:
        return None
    order = kb.ladders.reduce_axis
    t = tile[rd]
    if t in order:
        pos = order.index(t) + 1
        return rule_finding(kb, "O1.reduce-sweet-spot",
                        f"reduce-axis tile {t} is #{pos} in the {' -> '.join(map(str, order))} order: "
                        f"measure its neighbours too", "info")
    return None


# Scratch the select of pypto 0.2.0 (`pypto.where` of two tensors, WHERE_TT) allocates beside its operands:
# measured on KernelBench level-2 task 51 (the exact GELU of its last kernel, tile (2048, 8) fp32): "WHERE_TT
# in/output total size [209056] exceeds MEM_UB size [196608]" with a <12448 x DT_UINT8> temporary output.
WHERE_SCRATCH_BYTES = 12448


def held_bytes(kb: KnowledgeBase, tile: Shape, dtype: str, live_buffers: int, min_rows: int = 1,
               select_mask: bool = False) -> int:
    """Bytes an op chain holds in the unified buffer: `live_buffers` copies of the tile, whose leading
    axes count as at least `min_rows` rows when the op pads them (cumsum's 16-row transpose blocks).

    `select_mask`: the chain selects with `pypto.where`, which holds its value tiles (the chain's live
    buffers, at least the select's two), its boolean mask (one byte an element, each row padded to the
    32-byte alignment, so a narrow tile's mask is as large as a value tile) and a scratch buffer
    (WHERE_SCRATCH_BYTES). 2 x 65536 + 2048 x 32 + 12448 = 209056 B for (2048, 8) fp32, the compiler's own
    count; a (16384,) tile holds 159904 B and builds. A max pool's `where(gt(win, acc), win, acc)` holds
    three (win, acc, the result): with pypto 0.2.0 its (1, 104, 128) fp32 tile (185504 B) builds and
    (1, 112, 128) (198816 B) and (1, 128, 128) fail a pass."""
    rows = max(math.prod(tile[:-1]), min_rows)
    value = rows * tile[-1] * kb.dtype_bytes(dtype)
    held = value * live_buffers
    if select_mask:
        align = kb.limits.last_dim_align_bytes
        mask = rows * (-(-tile[-1] // align) * align)
        held = max(live_buffers, 2) * value + mask + WHERE_SCRATCH_BYTES
    return held


def role_held_bytes(kb: KnowledgeBase, tile: Shape, role: TileRole) -> int:
    """held_bytes for a pattern's TileRole (its dtype, live buffers, padded rows and select mask)."""
    return held_bytes(kb, tile, role.dtype, role.live_buffers, role.min_rows, role.select_mask)


WHERE_HOLDS = "a where's two value tiles, its 32-byte-aligned mask and scratch"


def _where_binds(kb: KnowledgeBase, tile: Shape, dtype: str, live_buffers: int, min_rows: int, held: int) -> bool:
    """Whether `held` (with a select mask) is the where's count rather than the live buffers' (what to name)."""
    return held > held_bytes(kb, tile, dtype, live_buffers, min_rows)


@examples(valid=[ex(tile=(1, 1, 8192), dtype="fp32", live_buffers=4, users=False),
                 ex(tile=(8, 1000), dtype="fp32", live_buffers=3, users=False, min_rows=16)],
          invalid=[ex(tile=(1, 1, 16384), dtype="fp32", live_buffers=4, users=True, level="warn",
                      message="4 live buffers"),
                   ex(tile=(4, 4000), dtype="fp32", live_buffers=3, users=False, min_rows=16, level="info",
                      message="at least 16 rows")])
@cites("O1.ub-step-down")
def check_ub_step_down(kb: KnowledgeBase, tile: Shape, dtype: str, live_buffers: int, users: bool,
                       min_rows: int = 1, select_mask: bool = False) -> Finding | None:
    """An op chain that holds `live_buffers` tile-sized buffers at once must fit them all in the
    unified buffer. A tile the user chose is kept and warned about; the pack's own pick is stepped
    down by `step_down` (this finding then says so, at info)."""
    held = held_bytes(kb, tile, dtype, live_buffers, min_rows, select_mask)
    cap = kb.chip.ub_bytes
    if held <= cap:
        return None
    ladder = " -> ".join(map(str, kb.ladders.ub_step_down))
    what = f"tile {fmt_dims(tile)}: {live_buffers} live buffers" + (f" of at least {min_rows} rows" if min_rows > 1
                                                                    else "")
    if select_mask and _where_binds(kb, tile, dtype, live_buffers, min_rows, held):
        what = f"tile {fmt_dims(tile)}: {WHERE_HOLDS}"
    if users:
        return rule_finding(kb, "O1.ub-step-down", f"{what} hold {held} B > the {cap} B unified buffer; step "
                            f"prod(tile) down {ladder}", "warn")
    return rule_finding(kb, "O1.ub-step-down", f"{what} hold {held} B > the {cap} B unified buffer: stepped down along "
                        f"{ladder}", "info")


def step_down(kb: KnowledgeBase, tile: Shape, dtype: str, live_buffers: int, min_rows: int = 1,
              select_mask: bool = False, keep_last: bool = False) -> Shape:
    """O1.ub-step-down: halve the largest axis until prod(tile) reaches the next rung of the pack's
    ladder and the op chain's buffers fit the unified buffer. `keep_last`: halve the leading axes
    first, the last only when they are all 1 (a gather along the last axis, HW.gather-tile: a 3-D
    max pool's (1, 1, 124, 128) stepped down to (1, 1, 124, 64) lost pass-verify's Pass_28 and
    Pass_36 rows at its GATHER ops on pypto 0.2.0; (1, 1, 62, 128) verifies)."""
    new = list(tile)
    row_bytes = kb.dtype_bytes(dtype)
    align = kb.limits.last_dim_align_bytes

    def aligned_half(axis: int) -> bool:
        """Halving keeps the axis whole 32-byte rows (P4.last-dim-align), or it is no last axis, or it
        was not aligned before."""
        if axis != len(new) - 1 or (new[axis] * row_bytes) % align:
            return True
        return ((new[axis] // 2) * row_bytes) % align == 0

    def halve() -> bool:
        lead = [i for i in range(len(new) - 1) if new[i] > 1] if keep_last else []
        axes = lead or [i for i in range(len(new)) if new[i] > 1]
        # the largest axis, but not the last where halving leaves rows of part of 32 bytes ((8, 32, 56)
        # stepped to (8, 32, 28): 112-byte rows the NPU code generator refuses) while another can halve
        fine = [i for i in axes if aligned_half(i)] or axes
        if not fine:
            return False
        axis = max(fine, key=lambda i: (new[i], i))
        new[axis] //= 2
        return True

    for target in kb.ladders.ub_step_down:
        while math.prod(new) > target and halve():
            pass
        if held_bytes(kb, tuple(new), dtype, live_buffers, min_rows, select_mask) <= kb.chip.ub_bytes:
            return tuple(new)
    # Below the ladder's last rung: an op that pads its rows (cumsum's 16-row blocks) can still
    # overflow at the smallest rung; keep halving until the measured buffers fit.
    while held_bytes(kb, tuple(new), dtype, live_buffers, min_rows, select_mask) > kb.chip.ub_bytes and halve():
        pass
    return tuple(new)


def fill_padded_rows(kb: KnowledgeBase, tile: Shape, shape: Sequence[int], min_rows: int) -> Shape:
    """An op that pads its tile's leading axes to `min_rows` rows holds those rows anyway. When the
    tensor has more tiles than one pass takes (auto_tiles over the limit, so a loop follows), give
    the tile the rows it pays for (the axis next to the last, doubling, never past the tensor):
    the same unified buffer then covers up to `min_rows` times the data, with that many times fewer
    tiles (cumsum on (32768, 32768): (1, 1024) -> (16, 1024), 1048576 -> 65536 tiles). A small
    tensor keeps its tiles, which the cores run in parallel (measured on (128, 4000): (4, 1000)
    11.6 us in SIM, (16, 1000) 17.0 us)."""
    new = list(tile)
    if min_rows <= 1 or len(new) < 2:
        return tuple(new)
    axis = len(new) - 2
    cap = kb.limits.max_auto_tiles
    while (math.prod(new[:-1]) * 2 <= min_rows and new[axis] * 2 <= shape[axis]
           and auto_tiles(tuple(shape), tuple(new)) > cap):
        new[axis] *= 2
    return tuple(new)


# ------------------------------------------------------------------------------------ evaluate
def evaluate_tile(
    kb: KnowledgeBase,
    shape: Sequence[int],
    dtype: str,
    tile: Sequence[int] | str,
    reduce_dim: int | None = None,
    reducing: bool | None = None,
    strict_align: bool = False,
) -> TileEvaluation:
    """Every number and finding for one tile. Raises InputError for a tile of the wrong rank.
    `strict_align`: the tile serves a concat or a reduction (HW.concat-reduce-align)."""
    shape = check_shape(shape)
    b = kb.dtype_bytes(dtype)
    t = parse_tile_for(shape, tile)
    rd = normalise_axis(reduce_dim, len(shape)) if reduce_dim is not None else None
    is_reducing = (rd is not None) if reducing is None else reducing
    prod = math.prod(t)
    auto = auto_tiles(shape, t)
    segments = ceil_div(shape[rd], t[rd]) if rd is not None else None
    ub = ub_estimate(kb, prod, dtype, is_reducing)
    findings: list[Finding] = []
    for f in (
        check_vec_rank(kb, shape),
        check_prod_budget(kb, prod),
        check_ub_capacity(kb, ub, is_reducing),
        check_last_dim_align(kb, shape, t, dtype, strict_align or is_reducing),
        check_auto_tiles(kb, auto),
        check_contiguous(kb, shape, t, dtype),
        check_reduce_axis_used(kb, shape, t, rd),
        check_nonreduce_spend(kb, shape, t, rd, segments),
        check_sweet_spot(kb, shape, t, rd),
    ):
        if f is not None:
            findings.append(f)
    findings.extend(check_no_waste(kb, shape, t, dtype))
    return TileEvaluation(
        shape=shape, dtype=dtype, tile=t, reduce_dim=rd, prod=prod, auto_tiles=auto,
        contiguous_bytes=t[-1] * b, reduce_segments=segments,
        needs_loop=auto > kb.limits.max_auto_tiles, ub_bytes=ub,
        waste_axes=tuple(i for i, (s, x) in enumerate(zip(shape, t, strict=True)) if x > s),
        findings=tuple(findings),
    )


# ------------------------------------------------------------------------------------ enumerate
@cites("O1.reduce-sweet-spot", "O1.contiguous-1kb", "O1.no-nonreduce-spend", "CL.reduce-order", "SIM.cost-estimate")
def rank_candidates(
    kb: KnowledgeBase,
    shape: Sequence[int],
    dtype: str,
    reduce_dim: int | None = None,
    top: int | None = 10,
    reducing: bool | None = None,
    estimate: TileCost | None = None,
    estimate_note: str = "",
    estimate_decides: bool | None = None,
    ranking_note: str = "",
) -> TilePlan:
    """Enumerate and rank tiles in the documents' order.

    Order: hard limits filter the space (budget, UB capacity, alignment, rank); then no tile > shape;
    then contiguity >= 1 KB (the rest only when nothing reaches it); then fewer loops; then, while the
    reduce axis is split, no budget on non-reduce axes; then the reduce-axis sweet spot 16 -> 32 -> 64;
    then fewer reduce segments; then a fuller budget (fewer tiles).

    `estimate` prices a tile in µs (SIM.cost-estimate, see pypto_tui.estimate): the qualified tiles
    are priced, the cheapest is `best_by_estimate`, and when the pack ranks by the estimate the
    qualified tiles are reordered by price (never the others, never past a hard limit).
    """
    shape = check_shape(shape)
    b = kb.dtype_bytes(dtype)
    rd = normalise_axis(reduce_dim, len(shape)) if reduce_dim is not None else None
    is_reducing = (rd is not None) if reducing is None else reducing
    vec_rank = check_vec_rank(kb, shape)
    if vec_rank is not None:
        # No tile of this rank can be set: enumerating one would only cost time (a 16-D space
        # takes gigabytes). The finding says what to do instead.
        return TilePlan(shape, dtype, rd, (), None, 0, 0, False, (vec_rank.message,))
    preset = kb.preset_for(shape, dtype, rd)
    space = rank_space(kb, shape, b, rd, is_reducing, align_unit(kb, dtype), preset.tile if preset else None)
    if space.empty is not None:
        return TilePlan(shape, dtype, rd, (), None, space.enumerated, 0, False, (space.empty,))

    order = list(space.order)
    rules_rank = {row: pos for pos, row in enumerate(order)}
    preset_row = space.preset_row
    rules_row = preset_row if preset_row is not None else order[0]
    # SIM.cost-estimate: price the qualified tiles; the pack says whether the price reorders them.
    at = [pos for pos, row in enumerate(order) if space.qualified(row)]
    priced = reorder(kb, estimate, len(order), at, [space.tile(order[pos]) for pos in at], estimate_note,
                     estimate_decides)
    price = {order[pos]: v for pos, v in priced.values.items()}
    estimate_row = order[priced.best] if priced.best is not None else None
    order = [order[pos] for pos in priced.order]
    chosen = order if top is None else order[: max(top, 1)]
    missing = list(dict.fromkeys(m for m in (preset_row, rules_row, estimate_row)
                                 if m is not None and m not in set(chosen)))
    if missing:
        chosen = [*chosen[: max(0, len(chosen) - len(missing))], *missing]
    notes: list[str] = []
    if space.reachable is False:
        notes.append(f"the last axis is only {shape[-1] * b} B: no tile reaches "
                     f"{kb.limits.contiguous_bytes} B contiguous, so the ranking compares the rest (O1)")
    elif space.fallback:
        notes.append("no candidate reaches 1 KB contiguous without waste: ranking the ones below it (O1)")

    cands: list[Candidate] = []
    by_row: dict[int, Candidate] = {}
    rank_of = {row: pos for pos, row in enumerate(order)}
    for row in chosen:
        ev = evaluate_tile(kb, shape, dtype, space.tile(row), rd, is_reducing)
        qualified = space.qualified(row)
        reasons = _reasons(kb, ev, qualified, space.sweet(row), space.spend(row), space.fallback,
                           row == preset_row, rd)
        if row in price:
            reasons.append(f"estimate {price[row]:.2f} us (SIM.cost-estimate)")
        by_row[row] = Candidate(rank_of[row], ev, qualified, tuple(reasons), row == preset_row,
                                rules_rank[row], price.get(row))
        cands.append(by_row[row])
    cands.sort(key=lambda c: c.rank)
    # The documents' preset is their pick; when the estimate ranks, it stays best_by_rules.
    preset_pick = by_row.get(preset_row) if preset_row is not None and priced.ranking == "rules" else None
    recommended = preset_pick or (cands[0] if cands else None)
    return TilePlan(shape, dtype, rd, tuple(cands), recommended, space.enumerated, space.qualified_count,
                    space.fallback, tuple(notes), by_row.get(rules_row),
                    by_row.get(estimate_row) if estimate_row is not None else None, priced.ranking, priced.note,
                    ranking_note if estimate is not None else "")

def _reasons(kb: KnowledgeBase, ev: TileEvaluation, qualified: bool, sweet: int, spend: int,
             fallback: bool, preset: bool, rd: int | None) -> list[str]:
    out: list[str] = []
    if preset:
        out.append("the documents' preset for this shape (O1.reduce-sweet-spot)")
    need = kb.limits.contiguous_bytes
    if ev.waste_axes and not qualified:
        axes = ", ".join(map(str, ev.waste_axes))
        out.append(f"tile > shape on axis {axes}: ranked after tiles that fit (P4.no-waste)")
    if ev.contiguous_bytes >= need:
        out.append(f"{ev.contiguous_bytes} B contiguous >= {need} B (O1.contiguous-1kb)")
    elif fallback:
        out.append(f"{ev.contiguous_bytes} B contiguous: nothing reaches {need} B, compared anyway (O1.contiguous-1kb)")
    else:
        out.append(f"{ev.contiguous_bytes} B contiguous < {need} B: ranked after every tile that reaches it "
                   f"(O1.contiguous-1kb)")
    if ev.needs_loop:
        out.append(f"auto_tiles {ev.auto_tiles} > {kb.limits.max_auto_tiles}: needs a loop (P4.auto-tiles)")
    if rd is not None:
        if spend > 1:
            out.append(f"{spend}x budget on non-reduce axes while the reduce axis is split (O1.no-nonreduce-spend)")
        if rd != len(ev.shape) - 1:
            order = kb.ladders.reduce_axis
            if sweet < len(order):
                out.append(f"reduce tile {ev.tile[rd]}: #{sweet + 1} in the {' -> '.join(map(str, order))} order "
                           f"(O1.reduce-sweet-spot)")
            elif ev.tile[rd] == 1 and ev.shape[rd] > 1:
                out.append("reduce axis not tiled (O1.reduce-axis-used)")
        out.append(f"{ev.reduce_segments} reduce segment(s)")
    out.append(f"prod {ev.prod}, auto_tiles {ev.auto_tiles}")
    return out


# ------------------------------------------------------------------------------------ cube tiles
@examples(valid=[ex(M=4096, K=4096, N=4096, dtype="fp32", m=[128, 128], k=[64, 64], n=[128, 128])],
          invalid=[ex(M=4096, K=4096, N=4096, dtype="fp32", m=[128, 64], k=[64, 64], n=[128, 128], message="FC4000"),
                   ex(M=4096, K=4096, N=4096, dtype="fp32", m=[128, 128], k=[24, 24], n=[128, 128], message="FC4001"),
                   ex(M=4096, K=4096, N=4096, dtype="fp32", m=[512, 512], k=[512, 512], n=[512, 512], message="needs"),
                   ex(M=8, K=4096, N=4096, dtype="fp32", m=[64, 64], k=[64, 64], n=[128, 128], rule="P4.no-waste",
                      message="mL0=64 > M=8")])
@cites("B.matmul-cube-tiles")
def evaluate_cube(kb: KnowledgeBase, M: int, K: int, N: int, dtype: str, m: Sequence[int],
                  k: Sequence[int], n: Sequence[int]) -> CubeEvaluation:
    """set_cube_tile_shapes(m, k, n) against the relations pypto 0.2.0 enforces and the L0/L1 sizes."""
    if len(m) != 2 or len(n) != 2 or len(k) not in (2, 3):
        raise InputError("cube tiles take m=[L0,L1], k=[L0,L1] or [L0,L1a,L1b], n=[L0,L1]")
    b = kb.dtype_bytes(dtype)
    rule = "B.matmul-cube-tiles"
    fs: list[Finding] = []
    k3 = (k[0], k[1], k[2] if len(k) == 3 else k[1])
    for name, (l0, l1) in (("m", (m[0], m[1])), ("n", (n[0], n[1])), ("k", (k3[0], k3[1])), ("k(b)", (k3[0], k3[2]))):
        if l0 <= 0 or l1 <= 0:
            raise InputError(f"cube tile {name} must be positive, got [{l0}, {l1}]")
        if not (l0 <= l1 and l1 % l0 == 0):
            fs.append(rule_finding(kb, rule, f"{name}L0={l0}, {name}L1={l1}: the compiler requires L0 <= L1 and "
                               f"L1 a multiple of L0 (FC4000)"))
    al = kb.chip.cube_align_elements
    for name, v in (("kL0", k3[0]), ("nL0", n[0])):
        if v % al:
            fs.append(rule_finding(kb, rule, f"{name}={v} is not a multiple of {al} elements (FC4001)"))
    l0a, l0b, l0c = m[0] * k3[0] * b, k3[0] * n[0] * b, m[0] * n[0] * 4
    l1 = (m[1] * k3[1] + k3[2] * n[1]) * b
    for name, used, cap in (("L0A", l0a, kb.chip.l0a_bytes), ("L0B", l0b, kb.chip.l0b_bytes),
                            ("L0C", l0c, kb.chip.l0c_bytes), ("L1", l1, kb.chip.l1_bytes)):
        if used > cap:
            fs.append(rule_finding(kb, rule, f"{name} needs {used} B > {cap} B: shrink the tiles"))
    for name, t, dim in (("mL0", m[0], M), ("kL0", k3[0], K), ("nL0", n[0], N)):
        if t > dim:
            fs.append(rule_finding(kb, "P4.no-waste", f"{name}={t} > {name[0].upper()}={dim}: wasted cube tile"))
    if not any(f.level == "error" for f in fs):
        fs.append(_ok(kb, rule, f"L0A {l0a} B, L0B {l0b} B, L0C {l0c} B, L1 {l1} B within the chip's buffers"))
    tasks = ceil_div(M, m[0]) * ceil_div(N, n[0])
    return CubeEvaluation((m[0], m[1]), tuple(k), (n[0], n[1]), l0a, l0b, l0c, l1, tasks, tuple(fs))


def cube_candidates(kb: KnowledgeBase, M: int, K: int, N: int, dtype: str, top: int = 5,
                    allow_waste: bool = False) -> list[CubeEvaluation]:
    """Legal cube tiles (L1 = L0, power-of-two, 16-aligned), fullest L0 use first, balanced M:N.
    `allow_waste`: also tiles larger than a dim (the 16-element minimum for M, K or N below 16)."""
    al = kb.chip.cube_align_elements
    pows = [1 << e for e in range(4, 10)]
    out: list[tuple[tuple[float, ...], CubeEvaluation]] = []
    for mm in pows:
        if mm > max(M, al):
            continue
        for nn in pows:
            if nn > max(N, al) or nn % al:
                continue
            for kk in pows:
                if kk > max(K, al) or kk % al:
                    continue
                ev = evaluate_cube(kb, M, K, N, dtype, [mm, mm], [kk, kk], [nn, nn])
                if has_error(ev.findings) or (not allow_waste and any(f.rule == "P4.no-waste" for f in ev.findings)):
                    continue
                fill = (ev.l0a_bytes / kb.chip.l0a_bytes + ev.l0b_bytes / kb.chip.l0b_bytes
                        + ev.l0c_bytes / kb.chip.l0c_bytes)
                balance = abs(math.log2(mm) - math.log2(nn))
                out.append(((-fill, balance, -kk), ev))
    out.sort(key=lambda x: x[0])
    return [ev for _, ev in out[:top]]



# ------------------------------------------------------------------------------------ decide
@cites("O1.ub-step-down", "HW.gather-tile", "SCAN.carry-tile")
def choose_tile(kb: KnowledgeBase, role: TileRole, user_tile: Sequence[int] | None = None,
                plan: TilePlan | None = None, loop_axis: int | None = None) -> TileChoice | None:
    """The tile `role` gets: the user's (kept, with any warning), else the pack's preset or the
    ranking's first, stepped down when the role's live buffers overflow the unified buffer.
    None when no legal tile exists (the ranking's notes say why).

    `loop_axis`: where the loop runs when the tile needs one. A recommended tile that spans several
    rows of that axis is swapped for the best qualified tile of the same size that spans one, so
    a chunk of a few rows does not waste the tile (P4.no-waste) or multiply its tiles per iteration."""
    source: TileSource
    note = ""
    if user_tile is not None:
        tile, source = parse_tile_for(role.shape, user_tile), "user"
    else:
        plan = plan or rank_candidates(kb, role.shape, role.dtype, role.reduce_dim, top=1, reducing=role.reducing)
        if plan.recommended is None:
            return None
        tile, source = plan.recommended.tile, ("preset" if plan.recommended.preset else "recommended")
        if source == "recommended" and loop_axis is not None:
            tile, note = _one_on_the_loop_axis(kb, role, plan.recommended, loop_axis)
    requested: Shape | None = None
    extra: list[Finding] = []
    if role.live_buffers > 1 or role.min_rows > 1 or role.select_mask:
        f = check_ub_step_down(kb, tile, role.dtype, role.live_buffers, users=source == "user", min_rows=role.min_rows,
                               select_mask=role.select_mask)
        if f is not None:
            extra.append(f)
            if source != "user":
                held = role_held_bytes(kb, tile, role)
                requested = tile
                gathers_last = role.min_tile is not None and role.min_tile[-1] > 1
                tile = fill_padded_rows(kb, step_down(kb, tile, role.dtype, role.live_buffers, role.min_rows,
                                                      role.select_mask, keep_last=gathers_last),
                                        role.shape, role.min_rows)
                source = "stepped-down"
                each = math.prod(requested) * kb.dtype_bytes(role.dtype)
                size = (f"{role.live_buffers} tile-sized buffers of at least {role.min_rows} rows, {held} B"
                        if role.min_rows > 1 else
                        f"{WHERE_HOLDS}, {held} B"
                        if _where_binds(kb, requested, role.dtype, role.live_buffers, role.min_rows, held) else
                        f"{role.live_buffers} tile-sized buffers, {role.live_buffers} x {each} B")
                note = (f"stepped down from {fmt_dims(requested)} (O1.ub-step-down): this op chain holds {size} > "
                        f"{kb.chip.ub_bytes} B of unified buffer")
                extra = [rule_finding(kb, "O1.ub-step-down", f"tile {fmt_dims(tile)} used: {note}", "info")]
    if role.min_tile is not None:
        low = check_gather_tile(kb, tile, role.min_tile, role.shape)
        if low is not None and source == "user":
            extra.append(low)
        elif low is not None:
            raised = raise_to_floor(kb, tile, role.min_tile, role.shape)
            what = f"raised from {fmt_dims(tile)} to {fmt_dims(raised)} (HW.gather-tile)"
            note = f"{note}; {what}" if note else what
            extra.append(rule_finding(kb, "HW.gather-tile", f"tile {fmt_dims(raised)} used: {what}", "info"))
            requested, tile = requested or tile, raised
    if role.carry_cap is not None:
        axis, chunks, elements = role.carry_cap
        long = check_carried_chunks(kb, tile, role.shape, axis, chunks, elements)
        if long is not None and source == "user":
            extra.append(long)
        elif long is not None:
            fitted = fit_carried_chunks(tile, axis, elements)
            what = f"cut from {fmt_dims(tile)} to {fmt_dims(fitted)} (SCAN.carry-tile)"
            note = f"{note}; {what}" if note else what
            extra.append(rule_finding(kb, "SCAN.carry-tile", f"tile {fmt_dims(fitted)} used: {what}", "info"))
            requested, tile = requested or tile, fitted
    ev = evaluate_tile(kb, role.shape, role.dtype, tile, role.reduce_dim, role.reducing, role.strict_align)
    return TileChoice(role, ev, source, requested, note, tuple(extra))


@examples(valid=[ex(tile=(8, 1024), shape=(32, 32768), axis=1, chunks=4, elements=8192),
                 ex(tile=(16, 1024), shape=(32, 4096), axis=1, chunks=4, elements=8192)],
          invalid=[ex(tile=(16, 1024), shape=(32, 5120), axis=1, chunks=4, elements=8192, message="5 chunks")])
@cites("SCAN.carry-tile")
def check_carried_chunks(kb: KnowledgeBase, tile: Sequence[int], shape: Sequence[int], axis: int, chunks: int,
                         elements: int) -> Finding | None:
    """A scan along the last axis carried across more than a few chunks compiles only with a smaller
    tile: pypto 0.2.0 stops with F7A001 "idx < size_" while it builds the chain (measured,
    SCAN.carry-tile). The caller decides the axis is one the limit holds for."""
    if not 0 <= axis < len(tile):
        return None
    count = ceil_div(shape[axis], max(tile[axis], 1))
    if count <= chunks or math.prod(tile) <= elements:
        return None
    fitted = fit_carried_chunks(tile, axis, elements)
    return rule_finding(kb, "SCAN.carry-tile", f"tile {fmt_dims(tuple(tile))} scans axis {axis} in {count} chunks "
                        f"with {math.prod(tile)} elements a tile: past {chunks} carried chunks pypto 0.2.0 takes at "
                        f"most {elements} (F7A001 idx < size_ at build); use {fmt_dims(fitted)}")


def fit_carried_chunks(tile: Sequence[int], axis: int, elements: int) -> Shape:
    """The tile halved on its largest axis other than the scanned one (the scanned width is what
    keeps the chunk count down) until it holds at most `elements`; the scanned axis last."""
    new = list(tile)
    while math.prod(new) > elements:
        others = [i for i in range(len(new)) if i != axis and new[i] > 1]
        i = max(others, key=lambda j: (new[j], j)) if others else axis
        if new[i] <= 1:
            break
        new[i] //= 2
    return tuple(new)


@examples(valid=[ex(tile=(1, 2, 64, 128), floor=(1, 2, 1, 1), shape=(2, 64, 64, 256)),
                 ex(tile=(1, 1, 64, 256), floor=(1, 2, 1, 1), shape=(2, 1, 64, 256))],
          invalid=[ex(tile=(1, 1, 64, 256), floor=(1, 2, 1, 1), shape=(2, 64, 64, 256), message="axis 1")])
@cites("HW.gather-tile")
def check_gather_tile(kb: KnowledgeBase, tile: Sequence[int], floor: Sequence[int],
                      shape: Sequence[int]) -> Finding | None:
    """An axis a kernel gathers along (index_select, a window's stride) must be tiled by at least its
    floor: at 1, pypto 0.2.0's pass-verify cannot run the GATHER at Pass_04 and leaves no row."""
    low = [i for i, (t, f, s) in enumerate(zip(tile, floor, shape, strict=True)) if t < min(f, s)]
    if not low:
        return None
    axes = ", ".join(f"axis {i} ({tile[i]} < {floor[i]})" for i in low)
    return rule_finding(kb, "HW.gather-tile", f"tile {fmt_dims(tuple(tile))} is below the gather's floor on {axes}: "
                        "pass-verify cannot check the GATHER at Pass_04 (no row); use "
                        f"{fmt_dims(raise_to_floor(kb, tile, floor, shape))}")


def raise_to_floor(kb: KnowledgeBase, tile: Sequence[int], floor: Sequence[int], shape: Sequence[int]) -> Shape:
    """The tile with every axis at least its floor (never past the axis), then the largest other
    axes halved until prod(tile) is back within the tile budget (P4.tile-budget)."""
    new = [max(t, min(f, s)) for t, f, s in zip(tile, floor, shape, strict=True)]
    raised = {i for i, (t, n) in enumerate(zip(tile, new, strict=True)) if n > t}
    while math.prod(new) > kb.limits.max_elements:
        free = [i for i in range(len(new)) if i not in raised and new[i] > max(floor[i], 1)]
        if not free:
            break
        axis = max(free, key=lambda i: (new[i], i))
        new[axis] //= 2
    return tuple(new)


def _one_on_the_loop_axis(kb: KnowledgeBase, role: TileRole, pick: Candidate, axis: int) -> tuple[Shape, str]:
    tile = pick.tile
    if not pick.evaluation.needs_loop or len(tile) < 2 or not 0 <= axis < len(tile) - 1 or tile[axis] == 1:
        return tile, ""
    wide = rank_candidates(kb, role.shape, role.dtype, role.reduce_dim, top=50, reducing=role.reducing)
    alt = next((c for c in wide.candidates if c.qualified and c.tile[axis] == 1
                and c.evaluation.prod == pick.evaluation.prod), None)
    if alt is None:
        return tile, ""
    return alt.tile, (f"{fmt_dims(alt.tile)} instead of {fmt_dims(tile)}: the same size with one row of the loop's "
                      f"axis {axis}, so a chunk of a few rows does not cut the tile")


@cites("B.cube-fill-cores", "B.matmul-cube-tiles")
def spread_cube(kb: KnowledgeBase, M: int, K: int, N: int, dtype: str, batch: int | None = 1) -> CubeEvaluation | None:
    """The pack's cube search (presets.toml [cube.search], B.cube-fill-cores): of the legal M x N
    tiles that waste nothing, the one whose products (M/mL0 x N/nL0 x batch) come nearest to one per
    cube core from below while each still does min_task_macs multiply-adds (else the fewest waves of
    tasks over the cores): the cost model runs a task per core, a task's fixed cost dominates a small
    one, and more tasks each load A and B again. Each tile holds K as deep in L1 as L1 takes beside
    its M and N rows, up to k_l1 and never past K: every L1 step of K costs about the same. Ties go to
    the deeper K, the squarer tile, then the wider N. None when the pack has no search, the caller
    cannot say how many products run (`batch` None) or no tile fits."""
    search = kb.cube.search if kb.cube is not None else None
    if search is None or batch is None:
        return None
    al = kb.chip.cube_align_elements
    deepest = min(search.k_l1, max(al, 1 << max(0, K.bit_length() - 1)))  # never deeper than K itself
    k_l0 = min(kb.cube.k[0] if kb.cube is not None else al, deepest)
    cores = kb.chip.aic_cores
    pows = [1 << e for e in range(4, 10)]
    best: tuple[tuple[float, ...], CubeEvaluation] | None = None
    for mm in pows:
        for nn in pows:
            if mm > M or nn > N:
                continue
            k_l1 = deepest
            ev = evaluate_cube(kb, M, K, N, dtype, [mm, mm], [k_l0, k_l1], [nn, nn])
            while k_l1 > k_l0 and ev.l1_bytes > kb.chip.l1_bytes:  # halve K's depth until L1 holds the tile
                k_l1 //= 2
                ev = evaluate_cube(kb, M, K, N, dtype, [mm, mm], [k_l0, k_l1], [nn, nn])
            if has_error(ev.findings) or any(f.rule == "P4.no-waste" for f in ev.findings):
                continue
            tasks = ev.tasks * max(batch, 1)
            spread = tasks <= cores and mm * nn * K >= search.min_task_macs
            # past the cores, what costs is the number of waves of tasks, not the tasks themselves; within
            # one wave of small tasks, the fewest
            waves = math.ceil(tasks / cores)
            key = ((0.0, -tasks) if spread else (1.0, waves, tasks if waves == 1 else 0)) + (
                -k_l1, abs(math.log2(mm) - math.log2(nn)), -nn)
            if best is None or key < best[0]:
                best = (key, ev)
    return best[1] if best is not None else None


@cites("B.matmul-cube-tiles", "B.cube-fill-cores")
def choose_cube(kb: KnowledgeBase, M: int, K: int, N: int, dtype: str,
                design: Mapping[str, Sequence[int]] | None = None, batch: int | None = None) -> CubeChoice | None:
    """set_cube_tile_shapes for an M x K x N matmul (`batch` of them, None when the caller cannot say):
    the design's, else the pack's search when it has one, the batch is known and a tile fits
    (B.cube-fill-cores), else its starting point when it is legal and wastes nothing, else the best
    legal candidate; None when none is legal."""
    if design and all(k in design for k in ("m", "k", "n")):
        ev = evaluate_cube(kb, M, K, N, dtype, design["m"], design["k"], design["n"])
        return CubeChoice(M, K, N, ev, "the design's cube tiles")
    spread = spread_cube(kb, M, K, N, dtype, batch)
    if spread is not None and batch is not None:
        return CubeChoice(M, K, N, spread, f"the pack's cube search ({spread.tasks * max(batch, 1)} product tile(s) "
                          f"for {kb.chip.aic_cores} cube cores, K {spread.k[-1]} deep in L1; B.cube-fill-cores)")
    if kb.cube is not None:
        c = kb.cube
        ev = evaluate_cube(kb, M, K, N, dtype, list(c.m), list(c.k), list(c.n))
        if not has_error(ev.findings) and not any(f.rule == "P4.no-waste" for f in ev.findings):
            return CubeChoice(M, K, N, ev, "the pack's starting cube tiles (presets.toml [cube])")
    cands = cube_candidates(kb, M, K, N, dtype, top=1)
    if cands:
        return CubeChoice(M, K, N, cands[0], "the best legal candidate (tiles.cube_candidates)")
    # a dim below the 16-element cube minimum: the smallest legal tiles, with their waste reported
    cands = cube_candidates(kb, M, K, N, dtype, top=1, allow_waste=True)
    if not cands:
        return None
    return CubeChoice(M, K, N, cands[0], "the best legal candidate, larger than a dim below 16 (tiles.cube_candidates)")

CHECKS = {
    "tiles.rank_match": parse_tile_for,
    "tiles.reduce_sweet_spot": check_sweet_spot,
    "tiles.vec_rank": check_vec_rank,
    "tiles.prod_budget": check_prod_budget,
    "tiles.auto_tiles": check_auto_tiles,
    "tiles.last_dim_align": check_last_dim_align,
    "tiles.ub_capacity": check_ub_capacity,
    "tiles.ub_step_down": check_ub_step_down,
    "tiles.no_waste": check_no_waste,
    "tiles.contiguous": check_contiguous,
    "tiles.reduce_axis_used": check_reduce_axis_used,
    "tiles.nonreduce_spend": check_nonreduce_spend,
    "tiles.cube_tiles": evaluate_cube,
    "tiles.gather_tile": check_gather_tile,
    "tiles.carried_chunks": check_carried_chunks,
}

APPLIES = {"tiles.rank_candidates": rank_candidates, "tiles.choose": choose_tile, "tiles.choose_cube": choose_cube}
