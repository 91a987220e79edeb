"""A step is computed off the UI thread and says so; keys pressed before the user saw it are dropped;
a chain's kernel picker has a key (ctrl+k) listed in the footer."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Select

from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.dialogs import PathDialog
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_picker import KernelPickerDialog
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen

pytestmark = pytest.mark.slow

BLOCK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain" / "resnet_basic_block.py"


def _app(state: Path, task: Path = BLOCK) -> PyptoApp:
    app = PyptoApp(task=str(task), blink=False, state=state, trust_task_code=True)
    app.animation_level = "none"
    return app


def _status(app: PyptoApp) -> str:
    return str(app.screen.query_one("#status").render())


async def test_a_slow_step_is_busy_and_drops_the_keys_pressed_meanwhile(ui, state, monkeypatch) -> None:
    release = threading.Event()
    original = KernelScreen.prepare

    def slow_prepare(self: KernelScreen) -> None:
        assert threading.current_thread() is not threading.main_thread()  # off the UI thread
        release.wait(10)
        original(self)

    monkeypatch.setattr(KernelScreen, "prepare", slow_prepare)
    app = _app(state)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 3)
        assert isinstance(app.screen, LoopsScreen)
        await pilot.press("ctrl+n")
        kernel = app.screen
        assert isinstance(kernel, KernelScreen) and kernel.busy
        assert "writing the kernel module and linting it" in _status(app)  # says what it computes
        await pilot.pause(0.5)
        assert kernel.query_one("#body").loading  # and covers the body past 0.3 s
        for key in ("ctrl+n", "ctrl+b", "e"):  # Next on the last step is Export: not asked for
            await pilot.press(key)
        assert app.screen is kernel and not isinstance(app.screen, PathDialog)
        release.set()
        await ui.settle(pilot, app)
        assert app.screen is kernel and not kernel.busy and not kernel.query_one("#body").loading
        summary = str(kernel.query_one("#kernel-summary").render())
        assert kernel.source and "K3 sub, add, rsqrt, mul, mul, add, add, relu: tile" in summary
        assert "e exports the module" in _status(app)
        await pilot.press("ctrl+b")  # once shown, keys act again
        await ui.settle(pilot, app)
        assert isinstance(app.screen, LoopsScreen)


async def test_a_key_queued_before_the_step_was_painted_is_dropped(ui, state) -> None:
    app = _app(state)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 1)
        screen = app.screen
        assert isinstance(screen, DimsScreen) and screen._shown_at is not None
        early = events.Key("ctrl+n", None)
        early.time = screen._shown_at - 0.05  # pressed while the UI thread was still drawing the step
        assert screen.drops_key(early)
        assert not screen.drops_key(events.Key("ctrl+n", None))
        assert not screen.drops_key(events.Key("ctrl+q", None)) or not screen.busy


async def test_the_kernel_picker_has_a_key_in_the_footer(ui, state) -> None:
    app = _app(state)
    async with app.run_test(size=(160, 40)) as pilot:
        await ui.settle(pilot, app)
        assert app.screen.check_action("pick_kernel", ()) is False  # the Contract step has no picker
        await ui.forward(pilot, app, 1)
        dims = app.screen
        assert isinstance(dims, DimsScreen)
        assert dims.check_action("pick_kernel", ())
        footer_keys = [str(w.render()) for w in dims.query("FooterKey")]
        assert any("^k" in k and "Kernel" in k for k in footer_keys), footer_keys
        await pilot.press("ctrl+k")
        dialog = app.screen
        assert isinstance(dialog, KernelPickerDialog) and dialog.focused is dialog.query_one("#kernel-filter")
        await pilot.press("down", "enter")  # the highlight starts on the kernel shown (0)
        await ui.settle(pilot, app)
        assert app.screen is dims and app.session.design.kernel == 1
        assert dims.query_one("#kernel-picker", Select).value == 1
        assert app.session.step_pipeline.contract().op == "expression"  # eval BatchNorm + ReLU, one kernel


async def test_a_task_of_one_kernel_lists_no_kernel_key(ui, state) -> None:
    app = _app(state, ui.tasks / "softmax_rows.py")
    async with app.run_test(size=(160, 40)) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 1)
        assert isinstance(app.screen, DimsScreen)
        assert app.screen.check_action("pick_kernel", ()) is False
        assert not any("Kernel" in str(w.render()) for w in app.screen.query("FooterKey"))
