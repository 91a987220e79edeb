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
