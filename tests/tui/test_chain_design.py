"""A chain in the app (issue 21 item 4): the Contract step shows the graph and its kernels, the
Dimensions, Tiles and Loops steps show one kernel at a time (a picker above them), a tile typed
for a kernel is that kernel's own decision, and the Kernel step shows the module that uses it."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Select, Tree

from pypto_tui.design import Design, kernel_of
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.tiles_screen import TilesScreen

SWIGLU = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain" / "swiglu.py"


async def _next(pilot, app, ui, expect):
    await pilot.press("ctrl+n")
    await ui.settle(pilot, app)
    assert isinstance(app.screen, expect), str(app.screen.query_one("#status").render())
    return app.screen


async def test_a_chain_walks_all_five_steps_kernel_by_kernel(ui, state) -> None:
    app = PyptoApp(task=str(SWIGLU), blink=False, state=state, trust_task_code=True)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        contract = app.screen
        assert isinstance(contract, ContractScreen)
        tree = contract.query_one("#chain-view", Tree)
        labels = [str(n.label) for n in tree.root.children]  # gate's and up's kernels, then forward's own
        assert "3 kernels" in str(tree.root.label) and labels[0].startswith("gate  1 kernel")
        assert str(tree.root.children[2].label).startswith("kernel 2: swish, mul")
        assert contract.next_blocked() is None  # a chain has no one-operator fields to fill
        dims = await _next(pilot, app, ui, DimsScreen)
        picker = dims.query_one("#kernel-picker", Select)
        assert picker.display and picker.value == 0
        assert picker._allow_blank is False and len(picker._options) == 3  # one entry per kernel, no blank
        assert str(picker.query_one("#label").render()) == "kernel 0 of 3: linear (B) in gate"  # not the placeholder
        assert app.session.step_pipeline.contract().family == "matmul"
        tiles = await _next(pilot, app, ui, TilesScreen)
        picker = tiles.query_one("#kernel-picker", Select)
        picker.value = 2  # the swish kernel (silu(x @ Wg) * (x @ Wu))
        await ui.settle(pilot, app)
        assert app.session.design.kernel == 2
        assert app.session.step_pipeline.contract().family == "elementwise"
        await ui.type_into(pilot, app, "#tile-0", "8192")
        await ui.settle(pilot, app)
        assert app.session.design.kernels == {"2": {"tile": [8192]}}
        assert app.session.design.tile is None  # the task's own field stays a single kernel's
        await _next(pilot, app, ui, LoopsScreen)
        kernel = await _next(pilot, app, ui, KernelScreen)
        assert "TILE_SHAPE_K2 = (8192,)" in kernel.source
        assert kernel_of(app.session.pipeline).source == kernel.source
        summary = str(kernel.query_one("#kernel-summary").render())
        assert "K2 swish, mul: tile (8192,)" in summary and "tile None" not in summary  # each kernel's own tile
        # the decision is part of the design: saved and read back, it gives the same module
        again = Design.from_dict(app.session.design.to_dict())
        assert again.kernels == {"2": {"tile": [8192]}} and again.kernel == 2


async def test_a_model_returning_a_tuple_shows_every_output(ui, state) -> None:
    from textual.widgets import Static

    task = SWIGLU.with_name("tuple_return.py")
    app = PyptoApp(task=str(task), blink=False, state=state, trust_task_code=True)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen)
        summary = str(app.screen.query_one("#unknowns", Static).render())
        assert "a chain of operators, outputs (64, 512), (64,)" in summary
        assert "return t_n1, t_n2" in kernel_of(app.session.pipeline).source
