"""The im2col plan (pypto_tui.window) and what the tile and loop steps learned for it: loops cut in
whole output rows, the smallest count past the ladder when nothing on it fits, the compiler's
32-byte rule for concat and reductions, cube tiles for a matmul dim below 16."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.contract.conv import window_spec
from pypto_tui.contract.extract import extract_contract
from pypto_tui.design import Design, Pipeline
from pypto_tui.loops import candidate, choose_loop, plan_loops
from pypto_tui.plan import TileRole
from pypto_tui.tiles import choose_cube, choose_tile, evaluate_tile
from pypto_tui.window import plan_window

CONV = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv"


def spec_of(kb, name):
    from pypto_tui.contract.conv import window_spec

    return window_spec(extract_contract(CONV / name, kb))


def test_im2col_is_one_matmul_per_image_and_group(kb):
    plan = plan_window(spec_of(kb, "conv2d_grouped_strided.py"), limits=kb.limits.window)
    assert plan.strategy == "im2col" and plan.phase_planes
    # (OC/G) x (C/G * 3*3) @ (.. x N): on the phase planes N is the span of the 19 output rows at the
    # planes' pitch of 40 (the last row's 35 positions), what the kernel's columns hold, not OH*OW
    assert plan.matmul == (6, 4 * 9, 18 * 40 + 35)
    assert plan.repeat == 4 * 2 and plan.rows == 19 and plan.row_unit == 35
    assert plan.column_elements == 4 * 9 * (18 * 40 + 35)
    a = plan.axes[0]
    # padding 1 each side; room for the last block's strided views: 19*2 + 2*(3-1) = 42 rows
    assert (a.lo, a.prepared, a.hi, a.step) == (1, 42, 1, 2) and plan.prepare
    lines = dict(plan.rows_table())
    assert "W (6 x 36) @ columns (36 x 755)" in lines["implicit matmul"]
    assert "pitch of 40 (the 5 past each row's end" in lines["implicit matmul"]
    assert "8 such matmul(s)" in lines["implicit matmul"]
    assert lines["column buffer"].startswith(f"{4 * 9 * 755} elements")


def test_a_conv_that_gathers_its_windows_has_a_column_per_output_position(kb):
    plan = plan_window(spec_of(kb, "conv1d_dilated_strided.py"), limits=kb.limits.window)
    assert plan.strategy == "im2col" and not plan.flat
    _, K, N = plan.matmul
    assert N == plan.rows * plan.row_unit == plan.axes[0].out
    assert plan.column_elements == plan.spec.in_per_group * plan.taps * N
    assert f"columns ({K} x {N}); " in dict(plan.rows_table())["implicit matmul"]


def test_a_transposed_conv_is_a_conv_of_the_zero_inserted_input(kb):
    plan = plan_window(spec_of(kb, "conv_transpose2d_strided.py"), limits=kb.limits.window)
    h, w = plan.axes
    # stride 2: each input row followed by 1 zero row; dilation*(k-1) - padding = 2 - 1 = 1 zero row before
    assert (h.insert, h.step, h.lo, h.base) == (2, 1, 1, 0)
    # W: kernel 4 dilated by 2 spans 7, padding 1: 5 zeros before, stride 3
    assert (w.insert, w.step, w.lo) == (3, 1, 5)
    assert plan.reverse_taps and "zero insertion" in plan.strategy_text()
    assert h.prepared >= h.lo + h.data and h.prepared >= h.base + h.out + h.dilation * (h.kernel - 1)


def test_a_transposed_conv_whose_padding_exceeds_the_window_skips_positions(kb, tmp_path):
    from pypto_tui.contract.conv import window_spec

    p = tmp_path / "t.py"
    p.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                 "        super().__init__()\n        self.d = nn.ConvTranspose1d(2, 3, 3, stride=2, padding=4)\n\n"
                 "    def forward(self, x):\n        return self.d(x)\n\n\ndef get_inputs():\n"
                 "    return [torch.randn(1, 2, 20)]\n\n\ndef get_init_inputs():\n    return []\n")
    a = plan_window(window_spec(extract_contract(p, kb)), limits=kb.limits.window).axes[0]
    assert a.lo == 0 and a.base == 2  # dilation*(k-1) - padding = -2: the first two positions are skipped


def test_depthwise_convs_take_one_plane_per_item_and_pools_a_block_of_planes(kb):
    dw = plan_window(spec_of(kb, "conv2d_depthwise.py"), limits=kb.limits.window)
    assert dw.strategy == "depthwise-taps" and dw.matmul is None and dw.repeat == 4 * 12
    mx = plan_window(spec_of(kb, "maxpool2d_ceil.py"), limits=kb.limits.window)  # 4 images x 16 channels
    assert mx.strategy == "pool-taps" and mx.fill == float("-inf") and mx.channels_per_item == 8
    assert mx.repeat == 4 * 16 // 8
    with pytest.raises(ValueError, match="pool-taps"):
        plan_window(spec_of(kb, "maxpool3d.py"), "im2col", limits=kb.limits.window)
    with pytest.raises(ValueError, match="depthwise"):
        plan_window(spec_of(kb, "conv2d_grouped_strided.py"), "depthwise-taps", limits=kb.limits.window)


def test_a_stride_1_depthwise_conv_takes_all_of_an_images_planes_on_flat_views(kb):
    """CONV.depthwise-flat: stride 1 (padding, dilation and a bias allowed) reads the planes flat, one
    image per item; a strided one, and a depthwise-separable one, keep one plane per item."""
    from pypto_tui.design import kernel_of

    flat = plan_window(spec_of(kb, "conv2d_depthwise_flat.py"), limits=kb.limits.window)
    assert flat.strategy == "depthwise-taps" and flat.flat
    assert (flat.channels_per_item, flat.items_per_image, flat.repeat) == (16, 1, 2)
    strided = plan_window(spec_of(kb, "conv2d_depthwise.py"), limits=kb.limits.window)  # stride (1, 2)
    assert not strided.flat and strided.channels_per_item == 1
    assert not plan_window(spec_of(kb, "conv2d_depthwise_separable.py"), limits=kb.limits.window).flat
    p = Pipeline(kb, Design(task=str(CONV / "conv2d_depthwise_flat.py")))
    main = next(t for t in p.tile_choices() if t.role.name == "window")
    assert main.role.live_buffers == 4 and main.evaluation.prod <= 8192  # four tiles live (ops.toml)
    src = kernel_of(p).source
    assert "pypto.view(xf, [C, 1, SPAN], [img * C, 0, (r0 + TAP_H[t]) * QW + TAP_W[t]])" in src
    assert "row = pypto.view(acc, [C, 1, OW], [0, 0, r * QW]) + bias_row" in src
    assert "flat = prepared.reshape(n * c, 1, QH * QW)" in src


def test_the_average_divisor_is_constant_only_when_every_window_counts_the_same(kb):
    assert plan_window(spec_of(kb, "avgpool1d_padded.py"), limits=kb.limits.window).divisor == 5.0
    assert plan_window(spec_of(kb, "avgpool3d_asymmetric.py"), limits=kb.limits.window).divisor == 18.0
    # count_include_pad=False
    assert plan_window(spec_of(kb, "avgpool2d_exclude_pad.py"), limits=kb.limits.window).divisor is None


def test_the_dimension_step_offers_im2col_for_a_depthwise_conv_too(kb):
    p = Pipeline(kb, Design(task=str(CONV / "conv2d_depthwise.py")))
    assert p.dims().strategy == "conv-depthwise-taps" and "conv-im2col" in p.dims().alternatives
    alt = Pipeline(kb, Design(task=str(CONV / "conv2d_depthwise.py"), strategy="conv-im2col"))
    n_positions = alt.contract().operands[0].shape[-1]  # this fixture's output width: 64 positions a row
    assert alt.needs().cube == (1, 15, n_positions)  # M = OC/G = 1, K = 1 * 3*5, N = the row's positions


def test_needs_declare_the_plan_a_loop_in_whole_rows_and_the_window_tiles(kb):
    p = Pipeline(kb, Design(task=str(CONV / "conv1d_dilated_strided.py")))
    n = p.needs()
    assert [r.name for r in n.tiles] == ["columns", "window", "prepare"]
    assert n.tiles[0].strict_align and n.tiles[1].shape[0] == 1
    assert n.loop_axis == 2 and n.loop_unit == 1 and "implicit matmul" in dict(n.layout)
    # a strided 2-D conv reads its phase planes flat (CONV.flat-phases): whole rows of the phase width
    strided = Pipeline(kb, Design(task=str(CONV / "conv2d_grouped_strided.py"))).needs()
    assert [r.name for r in strided.tiles] == ["columns", "store", "prepare"]
    assert strided.loop_axis == 2 and strided.loop_unit == 40


def test_a_loop_in_units_counts_rows_and_views_whole_rows(kb):
    plan = plan_loops(kb, (4, 9, 19 * 35), "fp32", (4, 9, 256), axis=2, loop_count=4, unit=35)
    assert plan.total == 19
    c = plan.candidates[0]
    assert (c.loop_count, c.basic_batch, c.num_iters, c.tail) == (4, 5, 4, 4)
    assert c.view_shape == (4, 9, 5 * 35)


def test_past_the_ladder_the_smallest_count_that_fits_is_chosen(kb):
    # 63 rows of 28 tiles each: 1764 tiles fit the pack's 2048 in one pass, so the smallest count is 1
    tile = (1, 1, 16)
    shape = (1, 1, 63 * 16 * 28)
    plan = plan_loops(kb, shape, "fp32", tile, axis=2, unit=16 * 28)
    assert plan.recommended is not None and plan.recommended.ok
    assert plan.recommended.auto_tiles_per_iter <= kb.limits.max_auto_tiles
    assert plan.recommended.loop_count == min(c.loop_count for c in plan.candidates if c.ok)
    cand = candidate(kb, shape, tile, 2, 63, unit=16 * 28)
    assert cand.basic_batch == 1 and cand.auto_tiles_per_iter == 28
    big = (1, 1, 63 * 16 * 100)  # 100 tiles per row: two rows per iteration would be 200
    plan = plan_loops(kb, big, "fp32", tile, axis=2, unit=16 * 100)
    choice = choose_loop(kb, plan)
    assert choice is not None and choice.candidate.auto_tiles_per_iter <= kb.limits.max_auto_tiles


@pytest.mark.parametrize("rows, tiles_per_row", [(63, 28), (63, 100), (1000, 37), (4097, 3), (640, 2048)])
def test_the_smallest_fitting_count_is_the_one_a_full_scan_finds(kb, rows, tiles_per_row):
    """smallest_fitting_count bisects BASIC_BATCH (fitting is monotone in it); a scan from the
    ladder's top down to one unit per iteration must agree."""
    from pypto_tui.loops import ceil_div, smallest_fitting_count

    tile = (1, 1, 16)
    plan = plan_loops(kb, (1, 1, rows * 16 * tiles_per_row), "fp32", tile, axis=2, unit=16 * tiles_per_row)
    top = max((c for c in kb.ladders.loop_order if c <= plan.total), default=1)
    scanned = next((ceil_div(plan.total, bb) for bb in range(ceil_div(plan.total, top) - 1, 0, -1)
                    if candidate(kb, plan.shape, tile, 2, ceil_div(plan.total, bb), "main+tail", plan.unit).ok),
                   None)
    assert smallest_fitting_count(kb, plan) == scanned


def test_a_huge_elementwise_axis_tries_a_logarithmic_number_of_counts(kb, monkeypatch):
    """KernelBench 20 (LeakyReLU over 4096 x 393216 elements): a scan over every BASIC_BATCH past
    the ladder tried ~1e8 counts per candidate tile (minutes); the bisection tries ~log2 of that."""
    import pypto_tui.loops as loops

    plan = plan_loops(kb, (4096 * 393216,), "fp32", (16,), axis=0)
    tried: list[int] = []
    real = loops.candidate

    def counting(*args, **kwargs):
        tried.append(args[4])
        return real(*args, **kwargs)

    monkeypatch.setattr(loops, "candidate", counting)
    count = loops.smallest_fitting_count(kb, plan)
    assert count is not None and len(tried) <= 64
    assert real(kb, plan.shape, plan.tile, 0, count, "main+tail").ok


def test_a_matmul_inner_axis_over_the_compilers_limit_needs_a_loop(kb):
    # 128 rows of 1024 positions: the columns' 131072 positions are the matmul's inner axis
    shape, tile = (4, 1, 128 * 1024), (4, 1, 4096)
    assert kb.limits.max_matmul_inner == 65534
    free = plan_loops(kb, shape, "fp32", tile, axis=2, unit=1024)
    assert not free.needs_loop  # 32 tiles: the tile budget alone asks for no loop
    plan = plan_loops(kb, shape, "fp32", tile, axis=2, unit=1024, max_chunk=kb.limits.max_matmul_inner)
    assert plan.needs_loop and "inner axis" in plan.reason
    one = candidate(kb, shape, tile, 2, 1, unit=1024, max_chunk=kb.limits.max_matmul_inner)
    f = next(f for f in one.findings if f.rule == "HW.matmul-inner-axis")
    assert f.level == "error" and f.authority == "compiler" and not one.ok
    choice = choose_loop(kb, plan)
    assert choice is not None and choice.candidate.basic_batch * 1024 <= kb.limits.max_matmul_inner


def test_a_conv_loop_keeps_the_columns_within_the_matmul_limit(kb):
    p = Pipeline(kb, Design(task=str(CONV / "conv2d_grouped_strided.py")))
    assert p.needs().loop_max_chunk == kb.limits.max_matmul_inner
    tap = Pipeline(kb, Design(task=str(CONV / "maxpool2d_ceil.py")))
    assert tap.needs().loop_max_chunk is None  # no matmul: no inner-axis limit


def test_concat_and_reductions_are_held_to_the_compilers_32_byte_rule(kb):
    role = TileRole("columns", "TILE", (4, 9, 600), "fp32", None, reducing=False, strict_align=True)
    bad = choose_tile(kb, role, (4, 9, 100))
    assert bad is not None
    f = next(f for f in bad.evaluation.findings if f.rule == "HW.concat-reduce-align")
    assert f.level == "error" and f.authority == "compiler"
    plain = evaluate_tile(kb, (4, 9, 600), "fp32", (4, 9, 100))
    assert {f.rule for f in plain.findings if f.level == "error"} == {"P4.last-dim-align"}


def test_a_matmul_dim_below_16_still_gets_legal_cube_tiles(kb):
    cube = choose_cube(kb, 6, 36, 70, "fp32")
    assert cube is not None and cube.evaluation.m[0] == 16 and not any(
        f.level == "error" for f in cube.evaluation.findings)


def test_a_strided_window_axis_is_tiled_by_at_least_two(kb):
    """HW.gather-tile: KernelBench 46's window tile (1, 1, 64, 256) left Pass_04 without rows at
    the stride's GATHER; the tile step raises the gathered axis to 2 within the tile budget, and a
    user's tile below it gets the warning."""
    import math

    from pypto_tui.plan import TileRole
    from pypto_tui.tiles import choose_tile

    role = TileRole("window", "TILE", (1, 128, 128, 256), "fp32", None, reducing=False, min_tile=(1, 2, 1, 1))
    free = choose_tile(kb, TileRole("window", "TILE", (1, 128, 128, 256), "fp32", None, reducing=False))
    assert free is not None and free.tile[1] == 1  # what the ranking alone picks
    chosen = choose_tile(kb, role)
    assert chosen is not None and chosen.tile[1] == 2 and math.prod(chosen.tile) <= kb.limits.max_elements
    assert chosen.requested == free.tile and any(f.rule == "HW.gather-tile" for f in chosen.findings)
    user = choose_tile(kb, role, (1, 1, 64, 256))
    assert user is not None and user.tile == (1, 1, 64, 256)
    assert [f.level for f in user.findings if f.rule == "HW.gather-tile"] == ["warn"]


def test_a_depth_strided_3d_pool_takes_one_depth_slice_per_iteration(kb):
    """POOL.depth-slices: 0.2.0 leaves no pass-verify row at a gather along the depth axis of the
    rank-4 views, so the plan loops over output depth slices and gathers only H and W."""
    from pypto_tui.design import kernel_of

    dilated = plan_window(spec_of(kb, "maxpool3d_dilated.py"), limits=kb.limits.window)
    assert dilated.depth_slices and dilated.rows == 62  # floor((128 + 2 - 6 - 1) / 2) + 1
    assert plan_window(spec_of(kb, "avgpool3d_asymmetric.py"), limits=kb.limits.window).depth_slices
    # a 2-D pool strided along rows phase-splits them (POOL.phase-split) and runs blocks of rows; one with a
    # count map keeps one row per iteration
    assert not plan_window(spec_of(kb, "maxpool2d_ceil.py"), limits=kb.limits.window).depth_slices
    assert plan_window(spec_of(kb, "avgpool2d_exclude_pad.py"), limits=kb.limits.window).depth_slices
    # 1-D: its one axis is the row
    assert not plan_window(spec_of(kb, "maxpool1d_dilated.py"), limits=kb.limits.window).depth_slices
    p = Pipeline(kb, Design(task=str(CONV / "maxpool3d_dilated.py")))
    plan = p.loop_plan()
    assert plan is not None and plan.needs_loop and plan.recommended is not None
    assert plan.recommended.loop_count == 62 and plan.recommended.basic_batch == 1
    assert any(f.rule == "POOL.depth-slices" for f in plan.findings)
    code = kernel_of(p).source
    assert "ROWS = 1\n" in code and "LOOP_COUNT = 62\n" in code
    assert "pypto.index_select(win" not in code  # the depth is a scalar; H and W are phase-split
    assert "pypto.index_select(part, 2, keep_h[j_h])" in code and "pypto.index_select(part, 3, keep_w[j_w])" in code


@pytest.mark.parametrize("name", ["avgpool2d_exclude_pad.py", "avgpool2d_functional.py"])
def test_a_row_strided_2d_pool_takes_one_output_row_per_iteration(kb, name):
    """POOL.depth-slices for 2-D: the loop step pins one output row per iteration (the Loops step's
    count is the output height) and the kernel takes each tap's row at a scalar offset: no gather
    along the rows, whose index_select was most of the kernel's time (KernelBench 45)."""
    from pypto_tui.design import kernel_of

    p = Pipeline(kb, Design(task=str(CONV / name)))
    window = plan_window(spec_of(kb, name), limits=kb.limits.window)
    choice = p.loop_choice()
    assert choice is not None and choice.why == "slices" and choice.count == window.rows
    assert choice.candidate.basic_batch == 1 and choice.candidate.num_iters == window.rows
    k = kernel_of(p)
    assert k.constants["LOOP_COUNT"]["value"] == window.rows
    assert k.constants["LOOP_COUNT"]["numbers"]["iterations"] == window.repeat * window.rows
    # one row per view, of one plane or of a block of them (POOL.plane-blocks)
    assert k.constants["TILE"]["value"][1] == 1 and k.constants["TILE"]["value"][0] <= window.channels_per_item
    code = k.source
    assert "ROWS = 1\n" in code and "keep_h" not in code  # the rows are never gathered
    assert "[plane, r0 * " in code
    # W's stride: gathered from each view, or taken by the band on the cube (POOL.band-matmul)
    assert ("index_select" not in code) if window.band_matmul else ("pypto.index_select(win, 2, keep_w)" in code)


def test_a_one_group_transposed_conv_transposes_its_weights_whole(kb):
    """CONV.transposed: with one group the weights are transposed whole, with no concat (0.2.0 reported
    "F21001 cycle detected" at the one-tensor concat of level-1 70's design); groups keep the concat."""
    from pypto_tui.design import kernel_of

    one = kernel_of(Pipeline(kb, Design(task=str(CONV / "conv_transpose1d_dilated.py")))).source
    assert "wt = pypto.reshape(pypto.transpose(w, 0, 1), [OCG, CG * TAPS])" in one
    assert "per_group" not in one
    grouped = kernel_of(Pipeline(kb, Design(task=str(CONV / "conv_transpose2d_strided.py")))).source
    assert "pypto.concat(per_group, 0)" in grouped


def test_a_loop_count_asked_of_a_depth_slice_pool_is_named_not_silently_dropped(kb):
    """The pool keeps one output slice per iteration whatever count is asked: the loop step pins the
    count (what the Loops step shows is what the kernel runs), and a POOL.depth-slices finding says so."""
    from pypto_tui.design import kernel_of

    p = Pipeline(kb, Design(task=str(CONV / "maxpool3d_dilated.py"), loop_count=4))
    choice = p.loop_choice()
    assert choice is not None and choice.count == 62 and choice.requested == 4
    assert any(f.rule == "POOL.depth-slices" and "loop count 4 asked for" in f.message for f in choice.findings)
    k = kernel_of(p)
    assert "LOOP_COUNT = 62\n" in k.source and "ROWS = 1\n" in k.source
    assert "loop count 4 asked for; this kernel takes one output slice per iteration" in k.source
    assert k.constants["LOOP_COUNT"]["value"] == choice.count


def test_the_code_generator_writes_the_loop_count_the_loop_step_chose(kb):
    """Across the conv and pool fixtures, the generated LOOP_COUNT is the Loops step's count (1 when it
    chose no loop): the code generator never decides a loop of its own."""
    from pypto_tui.design import kernel_of

    for task in sorted(CONV.glob("*.py")):
        p = Pipeline(kb, Design(task=str(task)))
        k = kernel_of(p)
        if not k.supported or "LOOP_COUNT" not in k.constants:
            continue
        choice = p.loop_choice()
        assert k.constants["LOOP_COUNT"]["value"] == (choice.count if choice is not None else 1), task.name


def test_the_im2col_plan_is_made_once_by_the_dimension_step(kb, monkeypatch):
    """The window plan is the dimension step's, carried on the KernelPlan: the pattern's needs and
    its code read it and never plan again (the code generator cannot even import the planner)."""
    import pypto_tui.window as window
    from pypto_tui.design import kernel_of

    calls: list[str] = []
    real = window.plan_window
    monkeypatch.setattr(window, "plan_window", lambda spec, strategy=None, *, limits:
                        calls.append(strategy) or real(spec, strategy, limits=limits))
    p = Pipeline(kb, Design(task=str(CONV / "maxpool3d_dilated.py")))
    dims = p.dims()
    assert dims.window is not None and calls  # planned by the dimension step
    calls.clear()
    k = kernel_of(p)
    assert k.supported and calls == []
    assert p.kernel_plan().window is dims.window


def test_a_stride_one_2d_conv_plans_the_flat_form_and_the_others_keep_im2col(kb):
    """CONV.flat-taps is the plan's decision: a 2-D conv with stride 1 (padding and dilation allowed)
    reads its planes flat; a strided, 1-D or transposed conv keeps the column copies."""
    flat = plan_window(spec_of(kb, "conv2d_same_asymmetric.py"), limits=kb.limits.window)
    assert flat.strategy == "im2col" and flat.flat and flat.to_dict()["flat"] is True
    assert "flat planes" in flat.strategy_text()
    for name in ("conv1d_dilated_strided.py", "conv_transpose2d_strided.py", "conv3d_asymmetric.py"):
        assert not plan_window(spec_of(kb, name), limits=kb.limits.window).flat, name


def test_a_strided_2d_conv_plans_flat_reads_of_its_stride_phase_planes(kb):
    """CONV.flat-phases: a strided 2-D conv is flat over its phase planes; each phase plane holds the
    output's count plus the taps' reach (in phase positions), its rows in whole 32-byte blocks, and
    the prepared rows hold the phases side by side; the main kernel gathers nothing."""
    plan = plan_window(spec_of(kb, "conv2d_grouped_strided.py"), limits=kb.limits.window)  # stride 2, dilation 2
    assert plan.flat and plan.phase_planes and "stride-phase planes" in plan.strategy_text()
    assert [a.out for a in plan.axes] == [19, 35]
    assert plan.phase_lengths == (19 + 2, 40)  # 35 + 2 rounded up to 8 elements
    assert [a.prepared for a in plan.axes] == [42, 80] and plan.flat_pitch == 40
    assert not any(plan.gathers(i) for i in range(2))
    depthwise = plan_window(spec_of(kb, "conv2d_depthwise.py"), limits=kb.limits.window)  # stride (1, 2)
    assert not depthwise.phase_planes and depthwise.gathers(1)


@pytest.mark.parametrize(("conv", "phased"), [
    ("nn.Conv2d(64, 128, 1, stride=2)", True),  # one tap: a quarter of the input, no gather per tap
    ("nn.Conv2d(64, 128, 3, stride=2, padding=1)", False),  # many channels: im2col's windows are long runs
    ("nn.Conv2d(8, 16, 3, stride=2, padding=1)", True),  # up to the pack's phase_planes_channels
    ("nn.Conv2d(16, 16, 3, stride=2, padding=1, groups=2)", True),  # 8 channels per group
])
def test_phase_planes_take_few_channels_per_group_or_one_tap(kb, tmp_path, conv, phased):
    task = tmp_path / "strided.py"
    task.write_text("import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                    f"        super().__init__()\n        self.conv = {conv}\n\n    def forward(self, x):\n"
                    "        return self.conv(x)\n\n\ndef get_inputs():\n"
                    f"    return [torch.randn(2, {conv.split('(')[1].split(',')[0]}, 20, 24)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    spec = window_spec(extract_contract(task, kb))
    assert plan_window(spec, limits=kb.limits.window).phase_planes is phased


def test_the_flat_forms_loop_cuts_whole_prepared_rows(kb):
    """The columns of the flat form span whole prepared rows (QW positions each): the loop's unit is QW,
    and the store tile covers one output row of an item (OCG, OW)."""
    p = Pipeline(kb, Design(task=str(CONV / "conv2d_same_asymmetric.py")))
    plan = p.kernel_plan()
    qw = p.dims().window.axes[1].prepared
    assert qw == 80 + 1 + 2
    assert plan.tile("columns").role.shape == (5, 12, 48 * qw)
    assert plan.tile("store").role.shape == (7, 80)
    assert "window" not in {t.role.name for t in plan.tiles}


def test_the_packs_window_limits_size_the_blocks_and_reach_the_module(kb, tmp_path):
    """The block sizes are the pack's (limits.toml [window]), not the planner's: a pack that halves
    the pool's planes per item and the pre kernel's planes gets both in the plan and in the module,
    and a pack without the table gets the measured defaults."""
    import shutil

    from pypto_tui.design import kernel_of
    from pypto_tui.kb import WindowLimits, bundled_pack_dir, load_pack

    pack = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), pack)
    limits = pack / "limits.toml"
    text = limits.read_text()
    limits.write_text(text.replace("pool_planes = 8", "pool_planes = 4").replace("prepare_planes = 8",
                                                                                "prepare_planes = 2"))
    small = load_pack(pack)
    assert (small.limits.window.pool_planes, small.limits.window.prepare_planes) == (4, 2)
    mx = plan_window(spec_of(small, "maxpool2d_ceil.py"), limits=small.limits.window)  # 4 images x 16 channels
    assert mx.channels_per_item == 4 and mx.repeat == 4 * 16 // 4 and mx.prepare_planes == 2
    code = kernel_of(Pipeline(small, Design(task=str(CONV / "maxpool2d_ceil.py")))).source
    assert "\nPLANE_BLOCK = 4\n" in code and "\nPREP_PLANES = 2\n" in code
    assert "\nPLANE_BLOCK = 8\n" in kernel_of(Pipeline(kb, Design(task=str(CONV / "maxpool2d_ceil.py")))).source
    # the table may be left out: the measured defaults, which the bundled pack states as they are
    start = text.index("[window]")
    limits.write_text(text[:start] + text[text.index("[dtype_bytes]"):])
    assert load_pack(pack).limits.window == WindowLimits() == kb.limits.window
