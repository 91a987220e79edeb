"""The documented reference cases (rule P4, O1, P6, O2): every row must come out exactly."""

from __future__ import annotations

import pytest

from pypto_tui.loops import plan_loops
from pypto_tui.tiles import evaluate_tile, rank_candidates

# shape, tile, reduce dim, prod, auto_tiles, contiguous bytes, reduce segments, needs loop
ARITH = [
    ((262144,), (8192,), None, 8192, 32, 32768, None, False),
    ((67108864,), (8192,), None, 8192, 8192, 32768, None, True),
    ((16, 16384), (1, 8192), 1, 8192, 32, 32768, 2, False),
    ((16, 16384), (2, 4096), 1, 8192, 32, 16384, 4, False),
    ((16, 16384), (4, 4096), 1, 16384, 16, 16384, 4, False),
    ((16, 256, 256), (1, 16, 256), 1, 4096, 256, 1024, 16, False),
    ((16, 256, 256), (1, 32, 256), 1, 8192, 128, 1024, 8, False),
    ((16, 256, 256), (1, 64, 256), 1, 16384, 64, 1024, 4, False),
    ((16, 256, 256), (1, 256, 64), 1, 16384, 64, 256, 1, False),
    ((16, 256, 256), (1, 32, 512), 1, 16384, 128, 2048, 8, False),
    ((16, 64, 256, 256), (1, 16, 1, 256), 1, 4096, 16384, 1024, 4, True),
    ((16, 64, 256, 256), (1, 1, 16, 256), 1, 4096, 16384, 1024, 64, True),
    ((128, 4096), (4, 4096), 1, 16384, 32, 16384, 1, False),
    ((128, 4096), (1, 16384), 1, 16384, 128, 65536, 1, False),
]


@pytest.mark.parametrize(("shape", "tile", "rd", "prod", "auto", "contig", "segs", "loop"), ARITH)
def test_tile_arithmetic(kb, shape, tile, rd, prod, auto, contig, segs, loop):
    e = evaluate_tile(kb, shape, "fp32", tile, rd)
    assert (e.prod, e.auto_tiles, e.contiguous_bytes, e.reduce_segments, e.needs_loop) == (
        prod, auto, contig, segs, loop)


def _rank(plan, tile):
    return next((i for i, c in enumerate(plan.candidates) if c.tile == tile), None)


def _rules(e, level=None):
    return {f.rule for f in e.findings if level is None or f.level == level}


def test_verdicts_name_the_rule(kb):
    assert "O1.contiguous-1kb" in _rules(evaluate_tile(kb, (16, 256, 256), "fp32", (1, 256, 64), 1), "warn")
    assert "P4.no-waste" in _rules(evaluate_tile(kb, (16, 256, 256), "fp32", (1, 32, 512), 1), "warn")
    assert "O1.reduce-axis-used" in _rules(evaluate_tile(kb, (16, 64, 256, 256), "fp32", (1, 1, 16, 256), 1), "warn")
    assert "O1.no-nonreduce-spend" in _rules(evaluate_tile(kb, (16, 16384), "fp32", (4, 4096), 1))
    assert "P4.no-waste" in _rules(evaluate_tile(kb, (128, 4096), "fp32", (1, 16384), 1), "warn")
    assert "P4.auto-tiles" in _rules(evaluate_tile(kb, (67108864,), "fp32", (8192,)), "warn")
    seven = evaluate_tile(kb, (16, 70), "fp32", (16, 7))
    assert "P4.last-dim-align" in _rules(seven, "error")
    assert next(f for f in seven.findings if f.rule == "P4.last-dim-align").authority == "pypto-docs"


def test_softmax_order(kb):
    plan = rank_candidates(kb, (16, 16384), "fp32", 1, top=500)
    r = [_rank(plan, t) for t in [(1, 8192), (2, 4096), (4, 4096)]]
    assert r[0] is not None and all(x is None or r[0] < x for x in r[1:])


def test_reduction_3d_order_and_preset(kb):
    plan = rank_candidates(kb, (16, 256, 256), "fp32", 1, top=500)
    assert plan.recommended.tile == (1, 16, 256)
    assert [c.tile for c in plan.candidates[:3]] == [(1, 16, 256), (1, 32, 256), (1, 64, 256)]
    below = _rank(plan, (1, 256, 64))
    assert below is not None and below > _rank(plan, (1, 64, 256))
    assert _rank(plan, (1, 32, 512)) is None  # tile > shape is never enumerated


def test_reduction_4d_uses_reduce_axis(kb):
    plan = rank_candidates(kb, (16, 64, 256, 256), "fp32", 1, top=500)
    assert [c.tile for c in plan.candidates[:3]] == [(1, 16, 1, 256), (1, 32, 1, 256), (1, 64, 1, 256)]
    assert _rank(plan, (1, 1, 16, 256)) > _rank(plan, (1, 16, 1, 256))


def test_triplet_order(kb):
    plan = rank_candidates(kb, (128, 4096), "fp32", 1, top=500)
    a, b = _rank(plan, (4, 4096)), _rank(plan, (1, 16384))
    assert a == 0 and (b is None or a < b)


def test_loop_counts_on_matmul_m(kb):
    plan = plan_loops(kb, (16384, 1024), "fp32", (128, 128), 0, why="matmul")
    got = {c.loop_count: c.basic_batch for c in plan.candidates}
    assert {k: got[k] for k in (8, 16, 32, 64)} == {8: 2048, 16: 1024, 32: 512, 64: 256}
    assert [c.loop_count for c in plan.candidates][:4] == [16, 32, 8, 64]
    assert plan.needs_loop and plan.recommended.loop_count == 16


def test_scalar_mul_loop(kb):
    plan = plan_loops(kb, (67108864,), "fp32", (8192,), 0, loop_count=32)
    c = plan.candidates[0]
    assert (c.basic_batch, c.num_iters, c.auto_tiles_per_iter) == (2097152, 32, 256)
    assert plan.needs_loop


def test_tail_is_flagged_with_ways_out(kb):
    plan = plan_loops(kb, (1000, 4096), "fp32", (1, 4096), 0, 16)
    c = plan.candidates[0]
    assert (c.basic_batch, c.num_iters, c.tail) == (63, 16, 55)
    assert any(f.rule == "P6.loop-tail" and f.level == "error" for f in c.findings)
    strategies = {(a.loop_count, a.tail_strategy) for a in plan.alternatives}
    assert (16, "main+tail") in strategies
    assert any(s == "divides" and 1000 % a == 0 for a, s in strategies)
