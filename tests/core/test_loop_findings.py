"""Loop findings that only apply to a loop that runs (issue 25, 10).

A plan that needs no loop and runs none said "looping along axis 2: loop along the outermost
axis" and gave its one-pass row a "tile cut down to the chunk" warning; a chunk's size was given
in elements beside a BASIC_BATCH column that counts blocks.
"""

from __future__ import annotations

from pypto_tui.loops import candidate, plan_loops


def test_the_loop_direction_is_only_judged_for_a_loop_that_runs(kb) -> None:
    none = plan_loops(kb, (24, 1, 3600), "fp32", (8, 1, 2048), axis=2, unit=100)
    assert not none.needs_loop
    assert "P6.outermost-axis" not in {f.rule for f in none.findings}
    picked = plan_loops(kb, (24, 1, 3600), "fp32", (8, 1, 2048), axis=2, loop_count=16, unit=100)
    assert "P6.outermost-axis" in {f.rule for f in picked.findings}
    one = plan_loops(kb, (24, 1, 3600), "fp32", (8, 1, 2048), axis=2, loop_count=1, unit=100)
    assert "P6.outermost-axis" not in {f.rule for f in one.findings}
    needed = plan_loops(kb, (4, 1 << 24), "fp32", (1, 4096), axis=1)
    assert needed.needs_loop and "P6.outermost-axis" in {f.rule for f in needed.findings}


def test_one_pass_cuts_no_tile_and_a_chunk_counts_its_blocks(kb) -> None:
    one = candidate(kb, (1, 1, 300), (1, 1, 304), 2, 1)
    assert "P4.no-waste" not in {f.rule for f in one.findings}  # the tile step's waste, not the loop's
    cut = candidate(kb, (24, 1, 3600), (8, 1, 2048), 2, 16, unit=100)
    waste = next(f for f in cut.findings if f.rule == "P4.no-waste")
    assert cut.basic_batch == 3
    assert "the 300 elements one iteration holds (BASIC_BATCH 3 x 100)" in waste.message
    plain = candidate(kb, (1, 4096), (1, 2048), 1, 4)
    assert "(BASIC_BATCH 1024)" in next(f for f in plain.findings if f.rule == "P4.no-waste").message


def test_the_star_is_never_a_warned_row_when_a_clean_row_exists(kb) -> None:
    """A matmul's M of 128 with a tile of 64 on it: every count on the ladder but 1 cuts the tile
    (P4.no-waste); the clean one-pass row is starred, not the documents' first."""
    from pypto_tui.loops import clean

    plan = plan_loops(kb, (128, 384), "fp32", (64, 256), axis=0, why="matmul")
    assert plan.needs_loop and any(not clean(c) for c in plan.candidates)
    assert plan.recommended is not None and clean(plan.recommended) and plan.recommended.loop_count == 1
    wide = plan_loops(kb, (4096, 384), "fp32", (64, 256), axis=0, why="matmul")  # 16 holds 256 rows: clean
    assert wide.recommended is not None and wide.recommended.loop_count == 16 and clean(wide.recommended)


def test_the_estimate_overrides_a_clean_row_only_by_saying_its_gain(kb) -> None:
    """Where the estimate decides and its pick carries a warning, the star goes to the clean row
    unless the estimate expects it to be slower, and the note says which and why."""
    shape, tile = (128, 384), (64, 256)

    def slow_one_pass(count: int) -> float:
        return 100.0 if count == 1 else 10.0 + count  # the cheapest loop: 8

    def fast_one_pass(count: int) -> float:
        return 1.0 if count == 1 else 10.0 + count

    kept = plan_loops(kb, shape, "fp32", tile, axis=0, why="matmul", estimate=fast_one_pass, estimate_decides=True,
                      ranking_note="the estimate decides: (test)")
    assert kept.ranking == "rules" and kept.recommended.loop_count == 1
    assert kept.ranking_note.startswith("the documents' order decides") and "has a warning" in kept.ranking_note
    taken = plan_loops(kb, shape, "fp32", tile, axis=0, why="matmul", estimate=slow_one_pass, estimate_decides=True,
                       ranking_note="the estimate decides: (test)")
    assert taken.ranking == "estimate" and taken.recommended.loop_count == 8
    assert "to take 5.56x its time" in taken.ranking_note  # 100 µs against 18


def test_the_ranking_note_never_contradicts_who_picked(kb) -> None:
    """A note saying the estimate decides beside a recommendation that follows the rules: not any more."""
    def price(count: int) -> float:
        return 10.0 + count

    for kw in ({"loop_count": 32}, {}):
        plan = plan_loops(kb, (16, 256), "fp32", (16, 256), axis=0, estimate=price, estimate_decides=True,
                          ranking_note="the estimate decides: (test)", **kw)
        assert plan.ranking == "rules"
        assert "the estimate decides" not in plan.ranking_note and "does not choose" in plan.ranking_note
