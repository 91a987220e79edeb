"""A conv through the app: the contract form shows its fields (an edit re-derives the output size),
the dimension step shows the im2col plan, and the tile, loop and kernel steps work on it."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.tiles_screen import TilesScreen

CONV = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_conv"


async def _next(pilot, app, ui, expect):
    await pilot.press("ctrl+n")
    await ui.settle(pilot, app)
    assert isinstance(app.screen, expect), (type(app.screen).__name__, str(app.screen.query_one("#status").render()))
    return app.screen


async def test_a_conv_from_contract_to_kernel(ui, state) -> None:
    app = PyptoApp(task=str(CONV / "conv2d_grouped_strided.py"), blink=False, state=state)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen) and screen.contract.family == "conv"
        assert screen.query_one("#f-op_args--stride").value == "2"
        assert screen.query_one("#f-op_args--groups").value == "2"
        assert screen.query_one("#f-op_args--dilation").value == "2"
        assert screen.query_one("#f-op_args--bias").value == "True"
        await ui.type_into(pilot, app, "#f-op_args--stride", "1")
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert app.session.design.contract_edits == {"op_args.stride": 1}
        assert screen.contract.output_shape == (4, 12, 38, 70)
        await ui.type_into(pilot, app, "#f-op_args--stride", "2,2")  # one per axis
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert screen.contract.output_shape == (4, 12, 19, 35)
        dims = await _next(pilot, app, ui, DimsScreen)
        text = str(dims.query_one("#dims-plan").render())
        # the columns span 19 rows at the phase planes' pitch PW = 40, the last row's 35 positions
        # (CONV.flat-phases); the tile takes whole rows
        assert "implicit matmul" in text and "W (6 x 36) @ columns (36 x 755)" in text
        assert "the tile step works on columns (4, 9, 760)" in text and "stride-phase planes" in text
        assert "one window view per tap" not in text  # the pack's im2col note, which this plan is not
        # the strategy's row in the alternatives says what this plan does, not the pack's im2col note
        alts = dims.query_one("#dims-alts")
        chosen = next(r for r in range(alts.row_count) if "▶" in str(alts.get_row_at(r)[0]))
        assert "stride-phase planes" in str(alts.get_row_at(chosen)[-1])
        tiles = await _next(pilot, app, ui, TilesScreen)
        assert tiles.last_error is None and tiles.last_evaluation is not None
        assert tiles.last_evaluation.shape == (4, 9, 760)
        loops = await _next(pilot, app, ui, LoopsScreen)
        assert loops.plan is not None and loops.plan.unit == 40 and loops.plan.total == 19
        kernel = await _next(pilot, app, ui, KernelScreen)
        assert "pypto.matmul" in kernel.source and "self.conv = nn.Conv2d(" in kernel.source
        assert "def create_conv2d_phase_kernel(" in kernel.source


async def test_a_depthwise_separable_conv_plans_its_pointwise_stage(ui, state) -> None:
    app = PyptoApp(task=str(CONV / "conv2d_depthwise_separable.py"), blink=False, state=state)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen) and app.screen.contract.output_shape == (3, 12, 13, 40)
        dims = await _next(pilot, app, ui, DimsScreen)
        text = str(dims.query_one("#dims-plan").render())
        assert "depthwise-separable" in text and "W2 (12 x 8)" in text
        tiles = await _next(pilot, app, ui, TilesScreen)
        assert tiles.last_error is None
        await _next(pilot, app, ui, LoopsScreen)
        kernel = await _next(pilot, app, ui, KernelScreen)
        assert "create_conv2d_pointwise_kernel" in kernel.source and "self.pointwise = nn.Conv2d(" in kernel.source


# ------------------------------------------------------------------ the Loop step agrees with itself
def _pipeline(kb, name: str, **design):
    from pypto_tui.design import Design, Pipeline

    return Pipeline(kb, Design(task=str(CONV / name), **design))


def _view(kb, name: str, **design):
    from pypto_tui.screens.loops_screen import loop_view

    p = _pipeline(kb, name, **design)
    return p, loop_view(kb, p.loop_plan(), p.loop_choice())


def test_loop_view_without_a_loop_says_one_pass_everywhere(kb) -> None:
    """Issue 25 (10), conv2d_pointwise (no loop needed; the loop axis is 36 blocks of 100): no
    finding about a loop's direction or a count nobody chose, the ▶ row is one pass, and the
    axis label gives the axis length, not the block count."""
    p, view = _view(kb, "conv2d_pointwise.py")
    assert p.loop_choice() is None and not view.runs_loop
    assert view.headline == "No loop needed" and view.status == "no loop: the kernel runs in one pass"
    assert view.chosen is not None and view.chosen.loop_count == 1 and view.chosen.ok
    assert not [f for f in view.chosen.findings if f.level in ("warn", "error")]  # the ▶ row's verdict is ok
    rules = {f.rule for f in view.findings}
    assert "P6.outermost-axis" not in rules and not any("requested" in f.message for f in view.findings)
    assert "loop axis 2 (3600 = 36 blocks of 100" in view.axis_label
    # a tile wider than a one-pass axis is the tile step's waste, not a loop's (conv1d: tile 304 on 300)
    _, dilated = _view(kb, "conv1d_depthwise_separable_dilated.py")
    assert dilated.chosen is not None and dilated.chosen.loop_count == 1
    assert [f.rule for f in dilated.chosen.findings if f.level == "warn"] == []


def test_loop_view_of_a_picked_count_is_the_loop_the_kernel_runs(kb) -> None:
    """A loop picked where none is needed: the headline, the ▶ row, the status and the findings
    all speak of that loop, and the numbers agree (BASIC_BATCH in blocks, elements = blocks x unit)."""
    p, view = _view(kb, "conv2d_pointwise.py", loop_count=16)
    choice = p.loop_choice()
    assert choice is not None and choice.count == 16 and view.runs_loop
    assert view.headline == "Loop chosen" and "none is needed" in view.reason
    assert view.chosen == choice.candidate
    bb = choice.candidate.basic_batch
    assert view.status.startswith(f"loop_count 16, BASIC_BATCH {bb} x 100, {choice.candidate.num_iters} iterations")
    assert view.level == "warn"  # the loop runs along an inner axis (P6.outermost-axis)
    assert "P6.outermost-axis" in {f.rule for f in view.findings}
    waste = next(f for f in view.findings if f.rule == "P4.no-waste")
    assert f"the {bb * 100} elements one iteration holds (BASIC_BATCH {bb} x 100)" in waste.message


async def test_loop_step_shows_one_plan_on_a_conv(ui, state) -> None:
    """In the app: the table's cursor starts on the ▶ row, picking 16 moves the headline, the ▶,
    the status and the findings together, and another row's findings are labelled as a preview."""
    app = PyptoApp(task=str(CONV / "conv2d_pointwise.py"), blink=False, state=state)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await _next(pilot, app, ui, DimsScreen)
        await _next(pilot, app, ui, TilesScreen)
        loops = await _next(pilot, app, ui, LoopsScreen)
        table = loops.query_one("#loop-table")
        keys = list(loops._rows)
        assert keys[table.cursor_row] == "1:divides"  # the ▶ row, not the first candidate
        need = str(loops.query_one("#need-text").render())
        assert need.startswith("No loop needed") and "loop axis 2 (3600 = 36 blocks of 100" in need
        assert str(loops.query_one("#status").render()) == "no loop: the kernel runs in one pass"
        shown = loops.query_one("#loop-findings").findings
        assert "P6.outermost-axis" not in {f.rule for f in shown}
        table.focus()
        table.move_cursor(row=keys.index("16:divides") if "16:divides" in keys else
                          next(i for i, k in enumerate(keys) if k.startswith("16:")))
        await ui.settle(pilot, app)
        assert "loop_count 16 (highlighted, not chosen" in str(loops.query_one("#loop-need").border_subtitle)
        assert str(loops.query_one("#status").render()) == "no loop: the kernel runs in one pass"
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert app.session.design.loop_count == 16
        assert app.session.pipeline.loop_choice().count == 16
        assert str(loops.query_one("#need-text").render()).startswith("Loop chosen")
        assert str(loops.query_one("#status").render()).startswith("loop_count 16, BASIC_BATCH")
        assert table.get_row_at(table.cursor_row)[0].startswith("▶")
        assert "P6.outermost-axis" in {f.rule for f in loops.query_one("#loop-findings").findings}
        assert not loops.query_one("#loop-need").border_subtitle
