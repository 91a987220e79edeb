"""The tile counts a verification's test shapes give every counted axis (no compiler).

The shrink stops at the first size that keeps the design, which for a tiled reduction is exactly two
tiles: KernelBench level-2 14 shrank hidden 8192 to 2048, two 1024-wide tiles, and a row sum
hard-coded to those 2048 columns passed. The test shapes now give every tiled reduction, scan and
matmul K axis an odd number of tiles, at least three, keep the design's loop and tail, and stay
within a bound on elements x loop iterations; a second size gives each axis another count.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim import scaled
from pypto_tui.sim.scaled import AxisCount, DesignToKeep, Probe, count_targets, counted_axes, sized_for, spread
from pypto_tui.sim.verification import prepare_verify

TASKS = Path(__file__).parent / "fixtures" / "tasks"


def _probe(keep: DesignToKeep, shape_of: Any, matmul_of: Any = None, elements_of: Any = None) -> Any:
    """A probe over a synthetic geometry: `shape_of(values)` the kernel's shape at those sizes."""
    def probe(v: dict[Any, int]) -> Probe | None:
        shape = shape_of(v)
        mm = matmul_of(v) if matmul_of else None
        count = scaled.loop_count_at(keep, shape) if keep.loop_count else None
        iterations = scaled.loop_shape(shape[keep.loop_axis], count)[1] if count else 1
        kept = not scaled.kept_problems(keep, shape, mm)
        size = elements_of(v) if elements_of else shape[0] * shape[1]
        return Probe(tuple(counted_axes(keep, shape, mm)), kept, size, iterations)
    return probe


def test_count_targets_are_odd_from_three_and_never_past_the_task() -> None:
    assert count_targets(8192, 1024) == (3, 5, 7, 4, 6, 8)
    assert count_targets(8192, 1024, avoid=3) == (5, 7, 4, 6, 8)
    assert count_targets(2048, 1024) == ()          # the task has two: nothing larger is tried
    assert count_targets(3 * 1024, 1024, avoid=3) == ()
    assert sized_for(2048, 1024, 3) == 3072        # whole tiles stay whole
    assert sized_for(2051, 1024, 5) == 4099        # a tail keeps its size (3 columns)


def test_a_reduction_shrunk_to_two_tiles_takes_three_then_five() -> None:
    keep = DesignToKeep((1024, 8192), tile=(8, 1024), reduce_axis=1)
    probe = _probe(keep, lambda v: (v["batch"], v["hidden"]))
    first = spread({"batch": 16, "hidden": 2048}, ["batch", "hidden"], probe)
    assert first.values == {"batch": 16, "hidden": 3072} and [a.count for a in first.axes] == [3]
    second = spread(first.values, ["batch", "hidden"], probe, {a.what: a.count for a in first.axes})
    assert second.values == {"batch": 16, "hidden": 5120} and [a.count for a in second.axes] == [5]
    # a row sum hard-coded to the old test's width or tile count meets neither size
    assert 2048 not in (first.values["hidden"], second.values["hidden"])


def test_a_tail_is_kept_and_an_odd_count_is_left_alone() -> None:
    keep = DesignToKeep((64, 8205), tile=(8, 1024), reduce_axis=1)
    probe = _probe(keep, lambda v: (v["rows"], v["cols"]))
    first = spread({"rows": 16, "cols": 2051}, ["rows", "cols"], probe)
    assert first.values["cols"] == 2051 and first.axes[0].count == 3 and first.axes[0].tail == 3
    second = spread(first.values, ["rows", "cols"], probe, {"reduction axis 1": 3})
    assert second.values["cols"] == 4099 and second.axes[0].count == 5 and second.axes[0].tail == 3


def test_an_axis_of_two_tiles_in_the_task_stays_two_and_says_so() -> None:
    keep = DesignToKeep((64, 2048), tile=(8, 1024), reduce_axis=1)
    found = spread({"rows": 16, "cols": 2048}, ["rows", "cols"], _probe(keep, lambda v: (v["rows"], v["cols"])))
    assert found.values["cols"] == 2048 and "fewer than three" in found.notes[0]


def test_the_loop_and_its_tail_are_kept_while_the_reduction_spreads() -> None:
    """A loop along rows (7 iterations of 3 rows, a tail of 2 in the task) keeps at least two
    iterations and its tail at the shapes the reduction axis moves to."""
    keep = DesignToKeep((20, 8192), tile=(1, 1024), loop_count=7, loop_axis=0, reduce_axis=1)
    probe = _probe(keep, lambda v: (v["rows"], v["cols"]))
    found = spread({"rows": 5, "cols": 2048}, ["rows", "cols"], probe)
    assert found.values == {"rows": 5, "cols": 3072}
    shape = (found.values["rows"], found.values["cols"])
    count = scaled.loop_count_at(keep, shape)
    assert count is not None and not scaled.kept_problems(keep, shape)
    _, iterations, tail = scaled.loop_shape(shape[0], count)
    assert iterations >= 2 and tail  # the task's loop has a tail: so does the test's


def test_the_bound_on_elements_times_iterations_holds() -> None:
    keep = DesignToKeep((64, 8192), tile=(1, 1024), loop_count=16, loop_axis=0, reduce_axis=1)
    probe = _probe(keep, lambda v: (v["rows"], v["cols"]))
    start = {"rows": 16, "cols": 2048}
    base = probe(start)
    assert base is not None
    limit = base.work  # no room to grow: three tiles would cost half as much again
    found = spread(start, ["rows", "cols"], probe, work_limit=limit)
    assert found.values == start and "element-iterations" in found.notes[0]
    grown = spread(start, ["rows", "cols"], probe)
    assert grown.probe is not None and grown.probe.work <= scaled.MAX_TEST_WORK and grown.axes[0].count == 3


def test_a_test_loop_never_runs_more_than_the_bound() -> None:
    keep = DesignToKeep((4096, 256), tile=(1, 256), loop_count=4096, loop_axis=0)
    count = scaled.loop_count_at(keep, (1024, 256))
    assert count is not None and scaled.loop_shape(1024, count)[1] <= scaled.MAX_TEST_ITERATIONS


def test_a_matmul_k_gets_three_cube_tiles_and_n_stays_whole() -> None:
    keep = DesignToKeep((512, 256), loop_count=8, matmul=(512, 512, 256), cube=(128, 128, 256))
    probe = _probe(keep, lambda v: (v["mk"], v["n"]), lambda v: (v["mk"], v["mk"], v["n"]),
                   lambda v: v["mk"] * v["mk"])
    found = spread({"mk": 256, "n": 256}, ["mk", "n"], probe)
    assert found.values == {"mk": 384, "n": 256}
    assert [(a.what, a.count) for a in found.axes] == [("K", 3)]


def test_a_k_tied_to_n_takes_an_even_count_and_says_why() -> None:
    """M = K = N one size (KernelBench level-1 1): an odd number of 128-wide K tiles is never a whole
    number of 256-wide N tiles, so K takes 4 (not the shrink's 2) and the note says why."""
    keep = DesignToKeep((4096, 4096), loop_count=8, matmul=(4096, 4096, 4096), cube=(128, 128, 256))
    probe = _probe(keep, lambda v: (v["n"], v["n"]), lambda v: (v["n"], v["n"], v["n"]))
    found = spread({"n": 256}, ["n"], probe)
    assert found.values == {"n": 512} and found.axes[0].count == 4
    assert "no odd count" in found.notes[0]


def test_axes_the_design_covers_in_one_tile_are_not_counted() -> None:
    keep = DesignToKeep((64, 1024), tile=(8, 1024), reduce_axis=1)
    assert counted_axes(keep, (16, 1024)) == []
    wide = DesignToKeep((64, 8192), tile=(8, 1024), reduce_axis=1)
    assert counted_axes(wide, (16, 2048)) == [AxisCount("reduction axis 1", 2048, 1024, 8192)]


@pytest.mark.parametrize(("task", "axis"), [("sum_wide_rows.py", 1), ("cumsum_rows.py", 1)])
def test_verify_reports_the_counts_and_a_second_size(kb, task: str, axis: int) -> None:
    """A reduction and a scan through prepare_verify: the first test has an odd count of at least three
    on the axis and says why; the second runs another count at the same design."""
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASKS / task))))
    r = prepared.report
    assert r.supported and r.design_kept, r.reason
    (count,) = r.tile_counts
    assert count["tiles"] >= 3 and count["tiles"] % 2 == 1 and "odd" in r.shapes_why
    assert r.shapes["x"][axis] == count["size"] == count["tiles"] * count["tile"] - (-count["tail"] % count["tile"])
    assert prepared.second is not None and prepared.second.job is not None
    again = prepared.second.report
    assert again.tile_counts[0]["tiles"] not in (count["tiles"], 2) and again.tile == r.tile
    assert again.shapes["x"][axis] != r.shapes["x"][axis]


def test_a_tile_clamped_to_a_test_row_keeps_32_byte_rows(kb) -> None:
    """A group norm tiled (1, 9072) over rows of 63504 fp32 is tested at rows of 756 (3024 bytes): the
    clamped tile is rounded up to 760, as 0.2.0 refuses a reduction over a 3024-byte tile row
    (`lastDimBytes % BLOCK_SIZE`; measured: the (1, 756) kernel did not compile, (1, 760) verifies)."""
    p = Pipeline(kb, Design(task=str(TASKS / "group_norm_odd_width.py")))
    assert tuple(p.chosen_tile() or ()) == (1, 9072)
    prepared = prepare_verify(p)
    assert prepared.job is not None
    assert [tuple(i.shape) for i in prepared.job.inputs] == [(4, 64, 3, 63)]
    source = prepared.job.kernel_source
    tile = next(line for line in source.splitlines() if line.startswith("TILE_SHAPE = "))
    assert tile == "TILE_SHAPE = (1, 760)"
    assert "error HW.concat-reduce-align" not in source
