"""Test shapes that keep the design meaningful (no pypto): the tile and loop count verify reports
are the ones asked for, or the change is reported with its reason."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim import scaled
from pypto_tui.sim.scaled import DesignToKeep, kept_problems, reduce_shapes, size_classes
from pypto_tui.sim.verification import prepare_verify

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
ALL = sorted(p.name for p in TASKS.glob("*.py"))


def test_a_tile_must_stay_whole_and_the_loop_keep_two_iterations() -> None:
    keep = DesignToKeep(shape=(67108864,), tile=(16384,), loop_count=16)  # 16 iterations, no tail
    assert kept_problems(keep, (262144,)) == [] and scaled.loop_count_at(keep, (262144,)) == 16
    assert kept_problems(keep, (2 * 16384,)) == [] and scaled.loop_count_at(keep, (2 * 16384,)) == 2
    assert any("at least 2 iterations" in p for p in kept_problems(keep, (16384,)))  # one tests no offset
    assert kept_problems(keep, (131072 + 100,))                             # a tail the design lacks
    assert scaled.loop_count_at(keep, (16384,)) is None
    three = DesignToKeep(shape=(16, 256, 256), tile=(1, 16, 256))
    assert kept_problems(three, (2, 32, 256)) == []
    assert "less than one tile" in kept_problems(three, (2, 8, 256))[0]
    assert "not a whole number" in kept_problems(three, (2, 24, 256))[0]


def test_a_tiled_reduction_keeps_two_tiles() -> None:
    """A reduction shrunk to one tile never adds two partial sums: a kernel that reduces only the
    first tile of its axis passed that way."""
    keep = DesignToKeep(shape=(64, 65536), tile=(1, 16384), reduce_axis=1)
    assert kept_problems(keep, (2, 32768)) == []
    assert any("two tiles" in p for p in kept_problems(keep, (2, 16384)))
    one_tile = DesignToKeep(shape=(64, 16384), tile=(1, 16384), reduce_axis=1)  # one tile at full size
    assert kept_problems(one_tile, (2, 16384)) == []


def test_a_loop_tail_neither_appears_nor_disappears() -> None:
    keep = DesignToKeep(shape=(100, 64), tile=(1, 64), loop_count=16)  # 15 iterations of 7 rows, a tail of 2
    assert kept_problems(keep, (100, 64)) == []
    assert kept_problems(keep, (8, 64)) == [] and scaled.loop_count_at(keep, (8, 64)) == 3  # 3, 3, 2
    assert any("tail" in p or "iteration" in p for p in kept_problems(keep, (2, 64)))
    no_tail = DesignToKeep(shape=(96, 64), tile=(1, 64), loop_count=16)
    assert scaled.loop_count_at(no_tail, (7, 64)) == 7


def test_a_matmul_keeps_its_cube_tiles_per_iteration_and_two_k_tiles() -> None:
    keep = DesignToKeep(shape=(16384, 1024), loop_count=16, matmul=(16384, 1024, 1024), cube=(128, 128, 256))
    assert kept_problems(keep, (2048, 256), (2048, 256, 256)) == []
    assert kept_problems(keep, (256, 256), (256, 256, 256)) == []  # 2 iterations of one cube tile
    assert kept_problems(keep, (128, 256), (128, 256, 256))        # one iteration
    assert any(p.startswith("K ") for p in kept_problems(keep, (2048, 256), (2048, 64, 256)))
    assert any("two tiles" in p for p in kept_problems(keep, (2048, 256), (2048, 128, 256)))


def test_equal_sizes_shrink_apart_within_an_input_but_together_across_inputs() -> None:
    cls = size_classes({"x": (16, 64, 256, 256)})
    assert cls[("x", 2)] != cls[("x", 3)]  # an image's H and W
    mm = size_classes({"A": (16384, 1024), "B": (1024, 1024)})
    assert mm[("A", 1)] == mm[("B", 0)]    # K stays K


def test_reduce_shapes_stops_where_the_design_would_change() -> None:
    keep = DesignToKeep(shape=(67108864,), tile=(16384,), loop_count=16)
    out = reduce_shapes({"A": (16384, 4096)}, keep_values=set(),
                        accept=lambda s: not kept_problems(keep, (math.prod(s["A"]),)))
    assert math.prod(out["A"]) == 2 * 16384
    free = reduce_shapes({"A": (16384, 4096)}, keep_values=set())
    assert math.prod(free["A"]) <= scaled.VERIFY_ELEMENTS


@pytest.mark.parametrize("name", ALL)
def test_every_fixture_verifies_the_design_it_chose_or_says_what_changed(kb, name: str) -> None:
    report = prepare_verify(Pipeline(kb, Design(task=str(TASKS / name)))).report
    assert report.supported, report.reason
    assert all(": " in c for c in report.changes)
    if report.design_kept:
        assert report.tile == report.design_tile
        if report.loop_count != report.design_loop_count:  # a loop count that changes is listed
            assert any(c.startswith(f"LOOP_COUNT = {report.design_loop_count} -> ") for c in report.changes)
    else:
        assert any(n.startswith("not kept: ") for n in report.notes)
    assert max(math.prod(s) for s in report.shapes.values()) <= scaled.MAX_VECTOR_VERIFY_ELEMENTS


@pytest.mark.parametrize(("name", "tile", "loop"), [
    ("rms_norm.py", [1, 16, 1000], 16), ("mean_spatial.py", [1, 16, 1000], 16), ("elu.py", [8192], 16),
    ("scalar_mul_large.py", [16384], 16), ("softmax_rows.py", [2, 4096], 4),
])
def test_the_tile_and_loop_count_asked_for_are_the_ones_verified(kb, name: str, tile: list[int], loop: int) -> None:
    report = prepare_verify(Pipeline(kb, Design(task=str(TASKS / name), tile=tile, loop_count=loop))).report
    assert report.tile == tile and report.design_loop_count == loop, (report.changes, report.notes)
    assert report.design_kept and report.loop_count is not None and report.loop_count >= 2
    assert [c for c in report.changes if not c.startswith("LOOP_COUNT")] == []


LAYER_NORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, normalized_shape: tuple):
        super().__init__()
        self.ln = nn.LayerNorm(normalized_shape=normalized_shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def get_inputs():
    return [torch.randn(16, 64, 256, 256)]


def get_init_inputs():
    return [(64, 256, 256)]
"""


def test_a_design_too_big_to_keep_reports_what_changed_and_why(kb, tmp_path) -> None:
    """A LayerNorm over (64, 256, 256) keeps its normalized shape: 4 M elements a row, over the limit."""
    task = tmp_path / "layer_norm_big.py"
    task.write_text(LAYER_NORM, encoding="utf-8")
    report = prepare_verify(Pipeline(kb, Design(task=str(task)))).report
    assert not report.design_kept
    assert "over the verify limit" in report.notes[0] and "--scale full" in report.notes[0]
    assert any(n.startswith("not kept: ") for n in report.notes)
    assert report.changes and all("over the verify limit" in c for c in report.changes)


def test_full_scale_runs_the_task_shapes(kb) -> None:
    p = Pipeline(kb, Design(task=str(TASKS / "softmax_rows.py")))
    report = prepare_verify(p, scale="full").report
    assert report.shapes == {"x": [16, 16384]} and report.design_kept


def test_a_window_keeps_room_for_two_output_positions() -> None:
    """A conv's spatial size shrinks no further than its window needs (contract/conv.py min_sizes)."""
    shapes = {"x": (4, 3, 512, 256)}
    free = reduce_shapes(shapes, keep_values={3}, budget=1 << 10)
    floored = reduce_shapes(shapes, keep_values={3}, budget=1 << 10, min_sizes={512: 40, 256: 40})
    assert free["x"][2] < 40
    assert floored["x"][2] >= 40 and floored["x"][3] >= 40


CONV = TASKS.parent / "tasks_conv"


@pytest.mark.parametrize("name", ["conv2d_pointwise.py", "maxpool2d_ceil.py"])
def test_a_conv_tile_is_clamped_to_its_column_buffer_and_stays_aligned(kb, name: str) -> None:
    """The main tile of a conv or pool is the pattern's own tensor (columns, window views), not the
    kernel geometry: at smaller shapes it is clamped to that tensor, last dim a multiple of 32 B."""
    p = Pipeline(kb, Design(task=str(CONV / name)))
    prep = prepare_verify(p)
    assert prep.job is not None and prep.test is not None
    role = prep.test.needs().tiles[0]
    tile = prep.report.tile
    assert tile is not None and len(tile) == len(role.shape)
    assert tile[-1] % 8 == 0 and tile[-1] <= p.chosen_tile()[-1]
    assert all(t <= s for t, s in zip(tile[:-1], role.shape[:-1], strict=True))
    if prep.report.design_kept:
        assert tile == list(p.chosen_tile())
    else:
        assert tile[-1] - role.shape[-1] < 8  # covers the whole axis, padded to 32 B at most


def test_a_conv_or_pool_is_tested_on_two_images_even_when_the_batch_equals_the_channels(kb, tmp_path) -> None:
    """The batch only multiplies a window op's iterations (and pass-verify's time); a batch equal to
    the channel count (kept with the channels) is still cut to two images."""
    src = (CONV / "conv2d_depthwise.py").read_text(encoding="utf-8").replace("torch.randn(4, 12, 30, 64)",
                                                                           "torch.randn(12, 12, 30, 64)")
    task = tmp_path / "same_batch_and_channels.py"
    task.write_text(src, encoding="utf-8")
    for path in (CONV / "conv2d_grouped_strided.py", CONV / "maxpool3d.py", task):
        shapes = prepare_verify(Pipeline(kb, Design(task=str(path)))).report.shapes
        assert shapes is not None and shapes["x"][0] == 2, (path.name, shapes)
    assert prepare_verify(Pipeline(kb, Design(task=str(task)))).report.shapes["x"][1] == 12


MODULE_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self{params}):
        super().__init__()
        {init}

    def forward(self, x):
        return {forward}


def get_inputs():
    return [torch.{draw}({shape})]


def get_init_inputs():
    return [{init_args}]
"""


def _module_task(tmp_path, *, init: str, forward: str, shape: str, params: str = "", init_args: str = "",
                 draw: str = "randn"):
    path = tmp_path / "t.py"
    path.write_text(MODULE_TASK.format(params=params, init=init, forward=forward, shape=shape, init_args=init_args,
                                       draw=draw), encoding="utf-8")
    return path


def _conv_task(tmp_path, module: str, shape: str):
    return _module_task(tmp_path, init=f"self.conv = {module}", forward="self.conv(x)", shape=shape)


def test_a_conv_keeps_its_channels_by_position_while_an_equal_depth_shrinks(kb, tmp_path) -> None:
    """KernelBench 73: depth 32 == channels 32 kept the depth whole (and the test over 8 GiB)."""
    task = _conv_task(tmp_path, "nn.Conv3d(16, 16, 3, padding=1)", "2, 16, 16, 40, 48")
    shapes = prepare_verify(Pipeline(kb, Design(task=str(task)))).report.shapes
    assert shapes is not None
    assert shapes["x"][1] == 16 and shapes["x"][2] < 16


def test_a_transposed_conv_budgets_its_zero_inserted_input_not_just_x(kb, tmp_path) -> None:
    """KernelBench 81 (stride 5) ran out of 8 GiB in 16 s: x was 0.5 M elements, its zero-inserted
    input 13 M. The test's budget bounds the largest tensor the kernels touch."""
    from pypto_tui.contract.conv import window_spec
    from pypto_tui.design import Design as D
    from pypto_tui.window import plan_window

    task = _conv_task(tmp_path, "nn.ConvTranspose2d(4, 4, 3, stride=5, padding=1)", "2, 4, 128, 128")
    p = Pipeline(kb, D(task=str(task)))
    shapes = prepare_verify(p).report.shapes
    assert shapes is not None
    c = p.contract()
    from dataclasses import replace

    spec = window_spec(c, replace(c.operands[0], shape=tuple(shapes["x"])))
    plan = plan_window(spec, limits=kb.limits.window)
    prepared = spec.batch * spec.in_channels * math.prod(a.prepared for a in plan.axes)
    assert prepared <= scaled.MAX_VERIFY_ELEMENTS
    assert math.prod(shapes["x"]) * 20 < prepared  # the input alone would have let it grow 20x


EXTRA = TASKS.parent / "tasks_extra"


def test_odd_sizes_shrink_to_odd_sizes_within_the_budget() -> None:
    """KernelBench's irregular matmul (8205, 2949) x (2949, 5921) could not shrink at all (no
    half divides an odd size), so verify ran it at full size and the worker hit its memory cap."""
    out = reduce_shapes({"A": (8205, 2949), "B": (2949, 5921)}, keep_values=set())
    assert max(math.prod(s) for s in out.values()) <= scaled.VERIFY_ELEMENTS
    (m, k), (k2, n) = out["A"], out["B"]
    assert k == k2 and all(d % 2 for d in (m, k, n)) and len({m, k, n}) == 3
    assert all(d & (d - 1) == 0 for d in reduce_shapes({"x": (4096, 1024)}, keep_values=set())["x"])


def test_an_irregular_matmul_verifies_odd_shapes_with_its_cube_tiles_and_loop(kb) -> None:
    report = prepare_verify(Pipeline(kb, Design(task=str(EXTRA / "matmul_irregular_odd.py")))).report
    assert report.supported and report.design_kept, (report.changes, report.notes)
    (m, k), (_, n) = report.shapes["A"], report.shapes["B"]
    assert all(d % 2 for d in (m, k, n)) and m < 6151 and k < 2311 and n < 4441
    assert max(math.prod(s) for s in report.shapes.values()) <= scaled.MAX_VERIFY_ELEMENTS
    assert report.loop_count is not None and report.loop_count > 1
    if report.loop_count != report.design_loop_count:
        assert any(c.startswith(f"LOOP_COUNT = {report.design_loop_count} -> ") for c in report.changes)


def test_a_matmul_too_big_to_keep_whole_keeps_its_cube_tiles_before_its_loop(kb) -> None:
    """(16383, 4095) x (4095, 8191) with its 43 iterations needs inputs over the limit; the cube
    tiles alone do not, so they are what the test shapes keep (before: none of the design)."""
    p = Pipeline(kb, Design(task=str(EXTRA / "matmul_irregular_odd.py"), contract_edits={
        "inputs.A.shape": [16383, 4095], "inputs.B.shape": [4095, 8191]}))
    report = prepare_verify(p).report
    assert report.supported
    assert report.design_kept or "so the test shapes keep cube tiles" in report.notes[0], report.notes
    assert not any(c.startswith("CUBE_") for c in report.changes), report.changes


@pytest.mark.parametrize("name", ["bmm_wide_batch.py", "../tasks/batched_matmul.py"])
def test_batched_matmul_test_shapes_are_legal_for_the_cube(kb, name: str) -> None:
    """At the old blind halving the test shapes gave M=8, K=64, N=32: no legal cube tiles. Now the
    test shapes have cube tiles, the design's when they fit the limit, else the change is said."""
    prepared = prepare_verify(Pipeline(kb, Design(task=str(EXTRA / name))))
    assert prepared.job is not None and prepared.test is not None, prepared.report.reason
    (_, m, k), (_, _, n) = prepared.report.shapes["A"], prepared.report.shapes["B"]
    assert prepared.test.cube_choice() is not None, (m, k, n)
    report = prepared.report
    if report.design_kept:
        assert min(m, k, n) >= 128  # the design's L1 cube tiles, whole
    else:
        assert "over the verify limit" in report.notes[0] and any(c.startswith("CUBE_") for c in report.changes)


def test_a_vector_design_may_use_larger_test_shapes_than_a_cube_design(kb, tmp_path: Path) -> None:
    """An RMS norm over channels of (112, 64, 512, 512): keeping its tile and its loop needs 1.57M
    elements, over the cube designs' limit and within the vector designs' (the interpreter's cost
    is in the cube stages). Measured on KernelBench level 1: task 36 was verified without its design."""
    task = _module_task(tmp_path, params=", channels: int", init="self.channels = channels",
                        forward="x / torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + 1e-5)",
                        shape="112, 64, 512, 512", init_args="64", draw="rand")
    report = prepare_verify(Pipeline(kb, Design(task=str(task)))).report
    assert report.supported and report.design_kept, (report.changes, report.notes)
    largest = max(math.prod(s) for s in report.shapes.values())
    assert scaled.MAX_VERIFY_ELEMENTS < largest <= scaled.MAX_VECTOR_VERIFY_ELEMENTS
    assert DesignToKeep(shape=(4, 4), cube=(16, 16, 16)).element_limit == scaled.MAX_VERIFY_ELEMENTS
    assert DesignToKeep(shape=(4, 4), tile=(1, 4)).element_limit == scaled.MAX_VECTOR_VERIFY_ELEMENTS


def test_a_batch_norm_keeps_its_channels_by_position_so_an_equal_batch_still_shrinks(kb, tmp_path: Path) -> None:
    """Channels are what the module is built for; a batch of the same size is not (it held the test
    input of KernelBench 33 at 67M elements to keep the design, 2M once the batch could shrink)."""
    task = _module_task(tmp_path, params=", features: int", init="self.bn = nn.BatchNorm2d(num_features=features)",
                        forward="self.bn(x)", shape="64, 64, 512, 512", init_args="64", draw="rand")
    report = prepare_verify(Pipeline(kb, Design(task=str(task)))).report
    assert report.supported, report.reason
    n, c, *_ = report.shapes["x"]
    assert c == 64 and n < 64


SIZED_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self{params}):
        super().__init__()
        {init}

    def forward(self, {args}):
        return {forward}


{constants}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init_args}]
"""


def _sized_task(tmp_path: Path, name: str = "t.py", *, init: str = "pass", forward: str, constants: str,
                inputs: str, args: str = "x", params: str = "", init_args: str = "") -> Path:
    path = tmp_path / name
    path.write_text(SIZED_TASK.format(params=params, init=init, args=args, forward=forward, constants=constants,
                                      inputs=inputs, init_args=init_args), encoding="utf-8")
    return path


def test_a_norm_built_for_its_channels_keeps_its_design_at_fewer_channels(kb, tmp_path: Path) -> None:
    """KernelBench 33 and 34: the channels are fixed by `__init__`, so shrinking x alone needed 2M and
    3M elements to keep the tile and its two reduction tiles, over the limit. The task's constants
    shrink the channels too, and the baseline's weights follow."""
    task = _sized_task(tmp_path, params=", features: int", init="self.bn = nn.BatchNorm2d(num_features=features)",
                       forward="self.bn(x)", constants="batch_size = 64\nfeatures = 64\ndim1 = 512\ndim2 = 512",
                       inputs="torch.rand(batch_size, features, dim1, dim2)", init_args="features")
    p = Pipeline(kb, Design(task=str(task)))
    report = prepare_verify(p).report
    assert report.supported and report.design_kept, (report.notes, report.changes)
    assert report.sizes["features"][0] == 64 and 2 <= report.sizes["features"][1] < 64
    assert math.prod(report.shapes["x"]) <= scaled.MAX_VECTOR_VERIFY_ELEMENTS
    assert report.tile == report.design_tile  # the tile verified is the tile chosen
    assert any("features=" in c for c in report.changes)  # the changed constant is named


def test_a_verify_job_runs_the_task_at_its_smaller_constants(kb, tmp_path: Path) -> None:
    """The baseline is the task's own code at the test's constants: its file is the rewritten task,
    whose get_init_inputs gives the smaller channel count the kernel was built for."""
    task = _sized_task(tmp_path, params=", features: int", init="self.bn = nn.BatchNorm2d(num_features=features)",
                       forward="self.bn(x)", constants="batch_size = 64\nfeatures = 64\ndim1 = 512\ndim2 = 512",
                       inputs="torch.rand(batch_size, features, dim1, dim2)", init_args="features")
    prep = prepare_verify(Pipeline(kb, Design(task=str(task))))
    assert prep.job is not None
    rewritten = Path(prep.job.task_file)
    assert rewritten != task and rewritten.name == task.name
    assert f"features = {prep.report.sizes['features'][1]}" in rewritten.read_text(encoding="utf-8")
    assert list(prep.job.init_args) == [prep.report.sizes["features"][1]]


def test_two_equal_sizes_shrink_apart_through_their_own_constants(kb, tmp_path: Path) -> None:
    """KernelBench 12 (`A.unsqueeze(1) * B` with N = M = 4096): equal sizes across inputs shrink
    together, so keeping a tile 4096 wide kept 16M elements. N and M are separate constants."""
    task = _sized_task(tmp_path, args="A, B", forward="A.unsqueeze(1) * B", constants="M = 4096\nN = 4096",
                       inputs="torch.rand(N), torch.rand(N, M)")
    p = Pipeline(kb, Design(task=str(task)))
    report = prepare_verify(p).report
    assert report.supported, report.reason
    if p.chosen_tile()[-1] < 4096:
        pytest.skip(f"the pack chose {p.chosen_tile()}, which keeps its design without the constants")
    assert report.design_kept, report.notes
    assert report.shapes["B"][1] == 4096 and report.shapes["B"][0] < 4096 and "N" in report.sizes


def test_a_task_without_size_constants_still_says_the_design_is_too_big(kb, tmp_path: Path) -> None:
    """Literal shapes leave nothing to rewrite: the limit and its note stand (see the LayerNorm test)."""
    task = tmp_path / "layer_norm_big.py"
    task.write_text(LAYER_NORM, encoding="utf-8")
    report = prepare_verify(Pipeline(kb, Design(task=str(task)))).report
    assert not report.design_kept and report.sizes == {}


def test_a_conv_keeps_the_cube_tiles_of_its_matmul_when_its_channels_shrink() -> None:
    """A conv's channels are its matmul's K (input channels per group x taps) and N: they shrink
    only as far as the L1 cube tiles stay whole, with two K tiles where the task had two."""
    from pypto_tui.sim.module_test import _cube_problems

    cube = (64, 256, 64)
    assert _cube_problems([(576, 128)], [(576, 64)], cube) == []
    assert _cube_problems([(576, 128)], [(512, 128)], cube) == []             # two K tiles of 256 still
    assert any("K 288 is less than two tiles" in p for p in _cube_problems([(576, 128)], [(288, 128)], cube))
    assert any("K 144 is less than one tile" in p for p in _cube_problems([(576, 128)], [(144, 128)], cube))
    assert any("N 32" in p for p in _cube_problems([(576, 128)], [(576, 32)], cube))
    assert _cube_problems([(64, 32)], [(8, 4)], cube) == []                   # below one tile at full: free


def test_a_depthwise_conv_shrinks_its_channels_and_groups_together(kb, tmp_path: Path) -> None:
    """groups == in_channels is one structure at any channel count (KernelBench 86 kept 4M elements
    when the channels could not change)."""
    from pypto_tui.sim.module_test import _structure

    def graph(channels: int) -> object:
        task = _sized_task(tmp_path, f"dw{channels}.py", params=", c: int",
                           init="self.conv = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)",
                           forward="self.conv(x)", constants=f"channels = {channels}",
                           inputs="torch.rand(2, channels, 64, 64)", init_args="channels")
        return _structure(Pipeline(kb, Design(task=str(task))).contract().graph)

    assert graph(64) == graph(8)
    grouped = _sized_task(tmp_path, "g.py", params=", c: int", init="self.conv = nn.Conv2d(c, c, 3, groups=4)",
                          forward="self.conv(x)", constants="channels = 64", inputs="torch.rand(2, channels, 64, 64)",
                          init_args="channels")
    assert _structure(Pipeline(kb, Design(task=str(grouped))).contract().graph) != graph(64)


def test_smaller_constants_are_taken_when_the_shapes_alone_keep_the_design_only_larger(kb, tmp_path: Path) -> None:
    """KernelBench 84 (a depthwise conv) kept its design at 128 channels and ran out of 8 GB; its
    constants keep the same design at a smaller test, and the smaller one is verified."""
    from pypto_tui.sim.verify_shapes import measure_elements, small_shapes

    task = _sized_task(tmp_path, params=", c: int",
                       init="self.conv = nn.Conv2d(c, c, 3, groups=c, bias=False)", forward="self.conv(x)",
                       constants="batch_size = 16\nchannels = 128\nheight = 256\nwidth = 512",
                       inputs="torch.rand(batch_size, channels, height, width)", init_args="channels")
    p = Pipeline(kb, Design(task=str(task)))
    from pypto_tui.design import kernel_of
    from pypto_tui.sim.verify_shapes import design_to_keep

    by_shapes, kept, _ = small_shapes(p, design_to_keep(p, kernel_of(p)))
    report = prepare_verify(p).report
    assert report.supported and report.design_kept, report.notes
    if kept is None or measure_elements(p)(by_shapes) <= scaled.VERIFY_ELEMENTS:
        pytest.skip("the shapes alone already reach the smallest test")
    assert report.sizes, "no constant was made smaller"
    assert math.prod(report.shapes["x"]) < math.prod(by_shapes["x"])


def test_smaller_constants_keep_room_for_two_output_positions(kb, tmp_path: Path) -> None:
    """KernelBench 46 (avg pool 3-D, kernel 3, stride 2, padding 1): its depth constant shrank to 2,
    one output position, and pypto failed ('F7A001! idx < size_'). The constants keep the floors
    the shapes keep."""
    from pypto_tui.contract.conv import min_sizes, window_spec

    task = _sized_task(tmp_path, init="self.pool = nn.AvgPool3d(kernel_size=3, stride=2, padding=1)",
                       forward="self.pool(x)",
                       constants="batch_size = 16\nchannels = 32\ndepth = 128\nheight = 128\nwidth = 256",
                       inputs="torch.rand(batch_size, channels, depth, height, width)")
    prep = prepare_verify(Pipeline(kb, Design(task=str(task))))
    assert prep.test is not None
    c = prep.test.contract()
    spec = window_spec(c)
    floors = min_sizes(c)
    assert all(size >= floors.get(size, 0) for size in spec.spatial), (spec.spatial, floors)
    assert all(o >= 2 for o in spec.output_shape[2:]), spec.output_shape


def test_a_module_test_still_shrinks_its_batch_once_a_design_is_given_up() -> None:
    """KernelBench level-2 36 kept 16 images of a transposed conv chain's test after its conv's tile
    was given up, and ran out of memory: the batch shrinks on, as far as no further kernel's design
    is lost (here the tanh kernel's, below 8 images)."""
    from pypto_tui.sim.module_test import Candidate, _kernels_given_up, _shrink

    class Search:
        def evaluate(self, values: dict[str, int]) -> Candidate:
            problems = ["kernel 0 (conv_transpose): axis 2 64 is less than one tile of 16384"]
            if values["batch_size"] < 8:
                problems.append(f"kernel 4 (tanh): axis 0 {values['batch_size'] * 4} is less than one tile of 32")
            return Candidate(dict(values), None, None, values["batch_size"] * values["height"], problems)  # type: ignore[arg-type]

    search = Search()
    start = search.evaluate({"batch_size": 128, "height": 64})
    given_up = _kernels_given_up(start.problems)
    assert given_up == {"kernel 0 (conv_transpose)"}
    shrunk = _shrink(search, start, [("batch_size",)], keep=True, budget=16, given_up=given_up)  # type: ignore[arg-type]
    assert shrunk.values["batch_size"] == 8
    assert _shrink(search, start, [("batch_size",)], keep=True, budget=16).values["batch_size"] == 128  # type: ignore[arg-type]
