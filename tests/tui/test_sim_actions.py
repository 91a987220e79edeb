"""Simulate (tiles, loops) and verify from the app: workers with progress, results in place."""

from __future__ import annotations

import re

import pytest

from pypto_tui.screens import kernel_screen, sim_support
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.tiles_screen import TilesScreen
from pypto_tui.sim.availability import check_sim

needs_sim = pytest.mark.skipif(not check_sim().ok, reason="needs the [sim] extra (pypto 0.2.0 + CPU torch)")


async def _go(app, pilot, ui, steps: int) -> None:
    await ui.settle(pilot, app)
    for _ in range(steps):
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)


@pytest.mark.parametrize("steps,screen", [(2, TilesScreen), (3, LoopsScreen), (4, KernelScreen)])
async def test_without_the_simulator_the_actions_say_what_to_install(steps, screen, make_app, ui,
                                                                     monkeypatch) -> None:
    msg = "the simulator needs pypto 0.2.0: pip install 'pypto-tui[sim]'"
    monkeypatch.setattr(sim_support, "sim_unavailable", lambda: msg)
    monkeypatch.setattr(kernel_screen, "sim_unavailable", lambda: msg)
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, steps)
        assert isinstance(app.screen, screen)
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert "pypto-tui[sim]" in str(app.screen.query_one("#status").render())
        assert not app.screen.query_one("#work").display


async def test_a_failing_sweep_is_reported_in_place(make_app, ui, monkeypatch) -> None:
    from pypto_tui.errors import InputError
    from pypto_tui.sim import design_runs

    def boom(*a, **k):
        raise InputError("cannot scaffold this task: testing")

    monkeypatch.setattr(sim_support, "sim_unavailable", lambda: None)
    monkeypatch.setattr(design_runs, "sweep_loops", boom)
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, 3)
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, LoopsScreen)
        assert "simulate failed: cannot scaffold this task: testing" in str(app.screen.query_one("#status").render())


async def test_fake_sweep_fills_the_time_column_and_curve(make_app, ui, monkeypatch) -> None:
    """The screen's side of a sweep, with a stand-in report (the real one is tested below)."""
    from pypto_tui.sim import design_runs

    def fake(pipeline, jobs, progress, status, stop=None, forecast=None):
        plan = pipeline.loop_plan()
        rows = []
        for i, c in enumerate(sorted({c.loop_count for c in plan.candidates})):
            us = 10.0 + abs(i - 1) * 3
            status(type("J", (), {"label": f"loop_count {c}"})(), "kernel")  # the worker's stage line
            progress(i + 1, 3, type("R", (), {"label": f"loop_count {c}", "e2e_us": us, "status": "ok"})())
            rows.append(design_runs.SweepRow(f"loop_count {c}", c, i, True, "ring", measured=True, status="ok",
                                             e2e_us=us))
        best = min(rows, key=lambda r: r.e2e_us)
        return design_runs.SweepReport("loops", rows, len(rows), len(rows), rows[0], best,
                                       notes=["guided sweep: 3 simulation(s) for 3 qualified candidate(s)"])

    monkeypatch.setattr(sim_support, "sim_unavailable", lambda: None)
    monkeypatch.setattr(design_runs, "sweep_loops", fake)
    app = make_app("scalar_mul_large")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, 3)
        screen = app.screen
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert isinstance(screen, LoopsScreen)
        assert screen._times and all(isinstance(v, float) for v in screen._times.values())
        table = screen.query_one("#loop-table")
        col = [table.get_row_at(i)[-1] for i in range(table.row_count)]
        assert any(c for c in col)
        assert "guided sweep" in str(screen.query_one("#loop-sweep").render())


@needs_sim
@pytest.mark.sim
@pytest.mark.slow
async def test_real_loop_sweep_and_verify_softmax(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, 3)
        loops = app.screen
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert isinstance(loops, LoopsScreen)
        assert any(v is not None for v in loops._times.values()), str(loops.query_one("#status").render())
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        kernel = app.screen
        assert isinstance(kernel, KernelScreen)
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert kernel.verdict is not None and "PASSED" in kernel.verdict, kernel.verdict


def test_progress_lines_say_what_is_running_and_how_long_is_left() -> None:
    result = type("R", (), {"label": "loop_count 16", "e2e_us": 3.58, "status": "ok"})()
    line = sim_support.progress_line(2, 6, result, elapsed_s=20.0)
    assert line.startswith("2/6 compiled · about 40 s left") and "loop_count 16 3.6 µs" in line
    assert "left" not in sim_support.progress_line(6, 6, result, elapsed_s=60.0)
    stage = sim_support.stage_line("verify", "calculator")
    assert stage.startswith("verify: building pypto's calculator library (one-time")


async def test_verify_shows_the_workers_stage_and_a_failing_pass(make_app, ui, monkeypatch) -> None:
    """The kernel screen's side of verify, with a stand-in: the worker's stage on the progress
    row while it runs, and the first failing compiler pass in the verdict."""
    from pypto_tui.sim import verification

    seen: list[str] = []

    def fake(pipeline, scale, progress, status):
        status(None, "calculator")
        report = verification.VerifyReport(True, False, "compiler pass Pass_28_InferParamIndex is wrong",
                                           shapes={"x": [4, 16384]}, first_failing_pass="Pass_28_InferParamIndex")
        return report

    class Recorded(kernel_screen.WorkProgress):
        def __init__(self, job, done, total, text=""):
            super().__init__(job, done, total, text)
            seen.append(text)

    monkeypatch.setattr(kernel_screen, "sim_unavailable", lambda: None)
    monkeypatch.setattr(kernel_screen, "WorkProgress", Recorded)
    monkeypatch.setattr(verification, "verify", fake)
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await _go(app, pilot, ui, 4)
        screen = app.screen
        assert isinstance(screen, KernelScreen)
        await pilot.press("ctrl+r")
        await ui.settle(pilot, app)
        assert screen.verdict is not None and "Pass_28_InferParamIndex" in screen.verdict
    assert any(t.startswith("verify: building pypto's calculator library (one-time") for t in seen), seen


async def test_the_progress_row_keeps_its_clock_running(make_app, ui) -> None:
    """Issue 25 (11): the row's time was written with each stage change only, so a compile that
    stayed in one stage showed "· 3 s" for minutes. The row redraws its clock every second."""
    from pypto_tui.screens.messages import WorkFinished, WorkProgress

    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        screen.start_work("verify: starting")
        screen.post_message(WorkProgress("verify", 0, 0, sim_support.stage_line("verify", "kernel")))
        await pilot.pause()
        text = str(screen.query_one("#work-text").render())
        # a loaded machine may take a second to get here: the clock starts at 0 or 1 s
        assert re.fullmatch(r"verify: compiling and running the kernel · [01] s", text), text
        screen._work_started -= 65  # as if the stage had lasted a minute: no new message comes
        later = text
        for _ in range(100):  # the 1 s timer fires late on a loaded machine: wait up to 10 s for it
            await pilot.pause(0.1)
            later = str(screen.query_one("#work-text").render())
            if later != text:
                break
        assert re.fullmatch(r"verify: compiling and running the kernel · 1 min \d+ s", later), later
        screen.post_message(WorkFinished("verify", error="stopped"))
        await pilot.pause()
        assert not screen.query_one("#work").display and screen._work_timer is not None
