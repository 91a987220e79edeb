"""A pool takes a block of planes per item (POOL.plane-blocks): its window views lead with PLANES
(image, channel) planes, up to 8, so the loop's and every tap's fixed cost is shared.
Fast tests read the plan and the generated text and run the block arithmetic at every size (a block
shifted back where PLANES does not divide N*C); the compiler tests verify pools in the form, one run
at a block size that does not divide N*C, and catch blocks that all start at plane 0."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from family import CONV, module_task, window_plan
from support import CI_AND_REST, part

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many


def _pool_kernel(kb, task: str | Path) -> str:
    """The pool kernel's factory, after the module's constants (PLANE_BLOCK among them)."""
    src = kernel_of(Pipeline(kb, Design(task=str(task)))).source
    start = re.search(r"def create_\w+_pool\dd_kernel", src)
    assert start is not None
    constants = "\n".join(line for line in src.splitlines() if re.match(r"^[A-Z_]+ = ", line))
    return constants + "\n" + src[start.start():]


def _planes(kb, folder, shape: tuple[int, ...]) -> int:
    """Planes per item of a 3 x 3, stride 2 max pool over an input of `shape`."""
    return window_plan(kb, module_task(folder, "MaxPool2d(3, stride=2, padding=1)", shape)).channels_per_item


def test_a_pool_takes_a_block_of_planes_unless_its_planes_are_large_or_it_has_a_count_map(kb, tmp_path):
    assert window_plan(kb, CONV / "maxpool2d_ceil.py").channels_per_item == 8
    assert window_plan(kb, CONV / "avgpool2d_functional.py").channels_per_item == 8  # a constant divisor
    assert window_plan(kb, CONV / "maxpool1d_dilated.py").channels_per_item == 8
    assert _planes(kb, tmp_path, (3, 7, 20, 36)) == 8  # 21 planes: blocks span images, the last shifted back
    assert _planes(kb, tmp_path, (3, 1, 4, 6)) == 3  # no more planes than the input has
    # a plane of 1024 x 1040 prepared elements is a block on its own (the pre kernel's bound)
    assert _planes(kb, tmp_path, (3, 4, 1024, 1024)) == 1
    # count_include_pad=False: the divisor varies per position, a count map per plane
    assert window_plan(kb, CONV / "avgpool2d_exclude_pad.py").channels_per_item == 1


def test_the_window_views_and_the_tile_lead_with_the_block_of_planes(kb, tmp_path):
    pool = _pool_kernel(kb, CONV / "maxpool2d_ceil.py")
    assert "ITEMS = PLANE_BLOCKS * BLOCKS" in pool
    assert "plane = ((it // BLOCKS) * PLANE_LAST) // PLANE_SPREAD" in pool
    assert re.search(r"win = pypto\.view\(xq, \[PLANES, ", pool)
    src = kernel_of(Pipeline(kb, Design(task=str(CONV / "maxpool2d_ceil.py")))).source
    tile = re.search(r"^TILE = \((\d+),", src, re.M)
    assert tile is not None and 1 < int(tile.group(1)) <= 8
    one = _pool_kernel(kb, CONV / "avgpool2d_exclude_pad.py")  # one plane an item: the plain form
    assert "PLANE_BLOCK" not in one and "plane = it // BLOCKS" in one


def _block_starts(pool: str, n: int, c: int) -> tuple[int, list[int]]:
    """Run the generated kernel's block arithmetic (its prelude lines and the loop's first plane)."""
    block = re.search(r"^PLANE_BLOCK = (\d+)$", pool, re.M)
    assert block is not None
    names: dict = {"n": n, "c": c, "BLOCKS": 1, "PLANE_BLOCK": int(block.group(1)), "ceil_div": lambda a, b: -(-a // b)}
    for key in ("PLANES", "PLANE_BLOCKS", "PLANE_LAST", "PLANE_SPREAD"):
        line = re.search(rf"^\s*{key} = (.+)$", pool, re.M)
        assert line is not None, key
        names[key] = eval(line.group(1), names)  # our own generated arithmetic
    first = re.search(r"plane = (.+)$", pool, re.M)
    assert first is not None
    starts = [eval(first.group(1), {**names, "it": it}) for it in range(names["PLANE_BLOCKS"])]
    return names["PLANES"], starts


def test_blocks_of_planes_cover_every_plane_at_any_size_and_never_read_past_the_last(kb):
    pool = _pool_kernel(kb, CONV / "maxpool2d_ceil.py")
    for n in (1, 2, 3):
        for c in range(1, 21):
            planes, starts = _block_starts(pool, n, c)
            covered = set()
            for s in starts:
                assert 0 <= s and s + planes <= n * c, (n, c, s)
                covered.update(range(s, s + planes))
            assert covered == set(range(n * c)), (n, c)
            if (n * c) % planes == 0:  # whole blocks: each plane written once
                assert starts == list(range(0, n * c, planes))


@pytest.mark.sim
@pytest.mark.parametrize("which", CI_AND_REST)
def test_pools_in_blocks_of_planes_verify(kb, tmp_path, which):
    tasks = part([module_task(tmp_path, "AvgPool2d(3, stride=2, padding=1)", (3, 12, 20, 36)),
                  CONV / "maxpool2d_ceil.py", CONV / "avgpool2d_functional.py", CONV / "maxpool1d_dilated.py"], which)
    pipes = [Pipeline(kb, Design(task=str(t))) for t in tasks]
    for p in pipes:
        assert "PLANE_BLOCKS" in kernel_of(p).source
    # 3 x 12 = 36 planes: four blocks of 8 and one shifted back
    for r in verify_many(pipes, jobs=1, cache=False):
        assert r.supported and r.passed, r.reason
        assert r.max_abs_err is not None and r.max_abs_err < 1e-5


@pytest.mark.sim
def test_a_block_shifted_back_verifies_and_blocks_that_all_start_at_zero_fail(kb, broken_twins):
    pipe = Pipeline(kb, Design(task=str(CONV / "maxpool2d_ceil.py")))
    shifted, stuck = broken_twins([
        # 5 planes a block: 64 planes at the test shape are 13 blocks, the last one shifted back
        (pipe, "PLANES = min(PLANE_BLOCK, n * c)", "PLANES = min(5, n * c)"),
        (pipe, "plane = ((it // BLOCKS) * PLANE_LAST) // PLANE_SPREAD", "plane = ((it // BLOCKS) * 0) // PLANE_SPREAD"),
    ])
    assert shifted.status == J.OK and shifted.passed, (shifted.status, shifted.reason)
    assert stuck.status == J.MISMATCH and stuck.passed is False, (stuck.status, stuck.reason)


def test_the_test_shapes_keep_a_full_block_and_let_a_size_bounded_one_grow(kb, tmp_path):
    """A block of PLANE_BLOCK planes is a design the test keeps (its channels floored to a block over
    the test's images); a block bounded by a large plane is not: any smaller plane takes more."""
    from pypto_tui.sim.verify_shapes import design_to_keep
    full = Pipeline(kb, Design(task=str(CONV / "maxpool2d_ceil.py")))
    keep = design_to_keep(full)
    assert keep is not None and keep.exact_axes == (0,)
    assert window_plan(kb, CONV / "maxpool2d_ceil.py").test_planes == 2 * 8 + 1
    # ~309 K prepared elements a plane: 3 a block
    large = module_task(tmp_path, "MaxPool2d(3, stride=2, padding=1)", (3, 4, 512, 600))
    plan = window_plan(kb, large)
    assert plan.channels_per_item == 3 and plan.test_planes is None  # bounded by the plane's size
    keep = design_to_keep(Pipeline(kb, Design(task=large)))
    assert keep is not None and keep.exact_axes == ()



def test_a_pools_test_shapes_run_more_than_two_blocks_of_planes(kb, tmp_path):
    """With the 8 planes of one block, a kernel whose blocks all start at plane 0 passed: the shapes'
    floors and the size-constant search both keep more planes than two blocks."""
    from pypto_tui.sim.verification import prepare_verify

    task = tmp_path / "pool1d.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\nbatch_size = 64\nfeatures = 192\nsequence_length = 65536\n\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.pool = nn.MaxPool1d(kernel_size=8, stride=1, padding=4, dilation=3)\n\n"
        "    def forward(self, x):\n        return self.pool(x)\n\n\n"
        "def get_inputs():\n    return [torch.randn(batch_size, features, sequence_length)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    prepared = prepare_verify(Pipeline(kb, Design(task=str(task))))
    n, c, _ = prepared.report.shapes["x"]
    assert n * c > 2 * 8, prepared.report.shapes
    for name in ("maxpool2d_ceil.py", "maxpool1d_dilated.py"):
        shapes = prepare_verify(Pipeline(kb, Design(task=str(CONV / name)))).report.shapes["x"]
        assert shapes[0] * shapes[1] > 2 * 8, (name, shapes)
