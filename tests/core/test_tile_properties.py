"""Properties of the tile arithmetic against the direct formulas (hypothesis)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from pypto_tui.kb import bundled_pack_dir, load_pack
from pypto_tui.loops import candidate
from pypto_tui.tiles import align_unit, evaluate_tile, rank_candidates

KB = load_pack(bundled_pack_dir())
DTYPES = st.sampled_from(["fp32", "fp16", "bf16", "int8", "int32"])


@st.composite
def shape_and_tile(draw):
    rank = draw(st.integers(1, 4))
    # at most 4096 a side: a rank-4 shape then stays within the 2**48 elements shapes.py accepts
    # (5000 a side once drew (3849, 4133, 4182, 4231), which is refused as no device's)
    shape = tuple(draw(st.integers(1, 4096)) for _ in range(rank))
    tile = tuple(draw(st.integers(1, 2 * s)) for s in shape)
    rd = draw(st.one_of(st.none(), st.integers(-rank, rank - 1)))
    return shape, tile, rd


@given(shape_and_tile(), DTYPES)
def test_evaluation_matches_direct_formulas(st_, dtype):
    shape, tile, rd = st_
    e = evaluate_tile(KB, shape, dtype, tile, rd)
    b = KB.dtype_bytes(dtype)
    assert e.prod == math.prod(tile)
    assert e.auto_tiles == math.prod(math.ceil(s / t) for s, t in zip(shape, tile, strict=True))
    assert e.contiguous_bytes == tile[-1] * b
    assert e.needs_loop == (e.auto_tiles > 2048)
    if rd is None:
        assert e.reduce_segments is None
    else:
        assert e.reduce_segments == math.ceil(shape[rd] / tile[rd])
    levels = {f.rule: f.level for f in e.findings}
    assert (levels["P4.tile-budget"] == "error") == (e.prod > 16384)
    # a reduction's tile is checked by the compiler's own rule (HW.concat-reduce-align), others by PyPTO's docs'
    align = "HW.concat-reduce-align" if rd is not None else "P4.last-dim-align"
    assert levels.get(align, "ok") in ("ok", "error")
    assert (levels.get(align) == "error") == ((tile[-1] * b) % 32 != 0)
    if rd is not None and (tile[-1] * b) % 32:
        assert next(f for f in e.findings if f.rule == align).authority == "compiler"
    assert all(f.rule in KB.rules for f in e.findings)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 3000), min_size=1, max_size=3), DTYPES, st.data())
def test_every_candidate_is_legal_and_ranked_consistently(shape, dtype, data):
    shape = tuple(shape)
    rd = data.draw(st.one_of(st.none(), st.integers(0, len(shape) - 1)))
    plan = rank_candidates(KB, shape, dtype, rd, top=None)
    unit = align_unit(KB, dtype)
    assert plan.recommended is not None
    assert [c.rank for c in plan.candidates] == sorted(c.rank for c in plan.candidates)
    for c in plan.candidates:
        e = c.evaluation
        assert e.prod <= 16384
        assert e.ub_bytes <= KB.chip.ub_bytes
        assert e.tile[-1] % unit == 0
        for i, (s, t) in enumerate(zip(shape, e.tile, strict=True)):
            assert t <= s or (i == len(shape) - 1 and s % unit and t == -(-s // unit) * unit)
    # qualified candidates (1 KB, no waste) come before the rest
    flags = [c.qualified for c in plan.candidates]
    assert flags == sorted(flags, reverse=True) or plan.below_1kb_fallback


@given(st.integers(1, 10**7), st.integers(1, 256))
def test_loop_candidate_covers_the_axis(total, count):
    c = candidate(KB, (total, 8), (1, 8), 0, count)
    assert c.basic_batch == math.ceil(total / count)
    assert c.num_iters == math.ceil(total / c.basic_batch)
    assert (c.num_iters - 1) * c.basic_batch + c.tail == total
    assert 0 < c.tail <= c.basic_batch
    assert any(f.rule == "P6.loop-tail" for f in c.findings) == (c.tail != c.basic_batch)
