"""A sweep in the app announces its forecast, runs within a time budget, and Escape cancels it;
what finished is still shown. The sweep is a stand-in that waits on the stop signal it is given."""

from __future__ import annotations

import asyncio
import threading

from pypto_tui.screens import sim_support
from pypto_tui.screens.loops_screen import LoopsScreen


async def _go(app, pilot, ui, steps: int) -> None:
    await ui.settle(pilot, app)
    for _ in range(steps):
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)


def _report(stopped: str):
    from pypto_tui.sim import design_runs

    row = design_runs.SweepRow("loop_count 16", 16, 0, True, "ring", measured=True, status="ok", e2e_us=12.0)
    rep = design_runs.SweepReport("loops", [row], 5, 1, row, row, notes=[stopped] if stopped else [])
    rep.stopped = stopped
    return rep


async def test_escape_cancels_a_running_sweep(make_app, ui, monkeypatch) -> None:
    from pypto_tui.sim import design_runs

    started, seen = threading.Event(), {}

    def sweep(pipeline, jobs, progress, status, stop, forecast):
        forecast(design_runs.SweepForecast("loops", 5, True, 240.0, 2, "the pypto 0.2.0 default"))
        started.set()
        for _ in range(200):  # at most 20 s
            if stop.reason():
                break
            threading.Event().wait(0.1)
        seen["why"] = stop.reason()
        return _report(f"stopped: {seen['why']}")

    monkeypatch.setattr(sim_support, "sim_unavailable", lambda: None)
    monkeypatch.setattr(design_runs, "sweep_loops", sweep)
    app = make_app("scalar_mul_large")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, 3)
        screen = app.screen
        assert isinstance(screen, LoopsScreen)
        await pilot.press("ctrl+r")
        for _ in range(100):
            if started.is_set():
                break
            await asyncio.sleep(0.05)
        await pilot.pause()
        assert "about 4 min" in str(screen.query_one("#work-text").render())
        await pilot.press("escape")
        await ui.settle(pilot, app)
        assert seen["why"] == "cancelled"
        assert screen._sim_stop is None and screen._times == {16: 12.0}
        assert "stopped: cancelled" in str(screen.query_one("#loop-sweep").render())


async def test_the_budget_comes_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv(sim_support.BUDGET_ENV, "90")
    assert sim_support.sim_budget_s() == 90.0
    monkeypatch.setenv(sim_support.BUDGET_ENV, "soon")
    assert sim_support.sim_budget_s() == sim_support.DEFAULT_BUDGET_S
