"""A model the static reader cannot follow, in the app: the Contract step says where the reading stopped
and names the palette command that traces the model; the trace asks before the task's code runs, a no
leaves the task read statically, a yes shows the traced model's kernels grouped by submodule; `ui
--front-end traced` opens the app already traced (the command line was the consent)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Tree

from pypto_tui.screens.app import PyptoApp, build_app
from pypto_tui.screens.commands import TRACE_COMMAND, PyptoCommands
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import ConfirmDialog

MLP = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced" / "sequential_mlp.py"


def _status(app: PyptoApp) -> str:
    return str(app.screen.query_one("#status").render())


async def _open(ui, state, **kw) -> tuple[PyptoApp, object]:
    app = PyptoApp(task=str(MLP), blink=False, state=state, **kw)
    app.animation_level = "none"
    return app, app.run_test(size=ui.size)


async def test_the_static_stop_names_the_trace_and_a_no_runs_nothing(ui, state, cache) -> None:
    app, running = await _open(ui, state)
    async with running as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen)
        assert TRACE_COMMAND in _status(app) and "self.net(...)" in _status(app), _status(app)
        titles = [c[0] for c in PyptoCommands(app.screen)._commands()]
        assert TRACE_COMMAND in titles
        app.action_trace()
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")
        await ui.settle(pilot, app)
        assert app.session.design.front_end == "static" and str(MLP) not in app.trusted_tasks
        assert isinstance(app.screen, ContractScreen) and TRACE_COMMAND in _status(app)


async def test_a_yes_traces_the_model_and_shows_its_kernels(ui, state, cache) -> None:
    app, running = await _open(ui, state)
    async with running as pilot:
        await ui.settle(pilot, app)
        app.action_trace()
        await ui.settle(pilot, app)
        await pilot.press("y")
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen) and app.session.design.front_end == "traced"
        tree = screen.query_one("#chain-view", Tree)
        assert "kernels" in str(tree.root.label) and "net" in str(tree.root.children[0].label)
        assert "a chain of" in _status(app) and screen.next_blocked() is None
        titles = [c[0] for c in PyptoCommands(screen)._commands()]
        assert "Read the task statically" in titles and TRACE_COMMAND not in titles
        app.action_read_statically()
        await ui.settle(pilot, app)
        assert app.session.design.front_end == "static" and TRACE_COMMAND in _status(app)


async def test_the_command_line_front_end_opens_the_app_traced(ui, state, cache) -> None:
    app = build_app(task=MLP, front_end="traced")
    assert app.session.design.front_end == "traced" and str(MLP) in app.trusted_tasks
    app, running = await _open(ui, state, front_end="traced")
    app.trusted_tasks.add(str(MLP))
    async with running as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen) and app.screen.query("#chain-view")
