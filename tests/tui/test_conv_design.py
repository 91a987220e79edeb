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
        assert "implicit matmul" in text and "W (6 x 36) @ columns (36 x 665)" in text
        assert "the tile step works on columns (4, 9, 665)" in text
        tiles = await _next(pilot, app, ui, TilesScreen)
        assert tiles.last_error is None and tiles.last_evaluation is not None
        assert tiles.last_evaluation.shape == (4, 9, 665)
        loops = await _next(pilot, app, ui, LoopsScreen)
        assert loops.plan is not None and loops.plan.unit == 35 and loops.plan.total == 19
        kernel = await _next(pilot, app, ui, KernelScreen)
        assert "pypto.matmul" in kernel.source and "self.conv = nn.Conv2d(" in kernel.source


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
