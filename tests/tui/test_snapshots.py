"""SVG snapshots of each screen (pytest-textual-snapshot): fixed size, no blink, no animation.

Refresh on purpose with `pytest tests/tui/test_snapshots.py --snapshot-update` and review the
report: Textual upgrades change the rendering.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pypto_tui.design import Design
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.session import Autosave

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
SIZE = (120, 40)


def _app(state: Path, task: str | None = None, **kw: object) -> PyptoApp:
    app = PyptoApp(task=str(TASKS / f"{task}.py") if task else None, blink=False, state=state, **kw)  # type: ignore[arg-type]
    app.animation_level = "none"
    return app


async def _settle(pilot) -> None:
    """Wait until the step's background work is done, its result drawn and the focus and theme applied:
    on a loaded machine (the whole suite on two cores) one pause was not always enough, and a snapshot
    caught the screen between two paints."""
    app = pilot.app
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()
    for _ in range(600):  # at most 30 s (the Kernel step took over 5 s beside the sim tests in CI): the
        # step's worker has finished and the screen is no longer busy
        drawn = getattr(app.screen, "_shown_at", 0) is not None  # the app drops keys pressed before this
        if drawn and not getattr(app.screen, "busy", False) and not any(w.is_running for w in app.workers):
            break
        await pilot.pause(0.05)
    app.clear_notifications()
    await pilot.wait_for_scheduled_animations()
    for _ in range(3):
        await pilot.pause(0.05)


def _steps(n: int, *extra: str):
    async def run(pilot) -> None:
        await _settle(pilot)
        for _ in range(n):
            await pilot.press("ctrl+n")
            await _settle(pilot)
        for key in extra:
            await pilot.press(key)
        await _settle(pilot)

    return run


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")
    return tmp_path


def test_contract_softmax(snap_compare, state) -> None:
    async def run(pilot) -> None:
        await _settle(pilot)
        # the form is the step's AUTO_FOCUS; whether Textual's first focus (the Next button) or the form
        # holds it after the body is built depended on timing in the full suite: pin it
        pilot.app.screen.query_one("#form").focus()
        await _settle(pilot)

    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=run)


def test_contract_field_error(snap_compare, state) -> None:
    async def run(pilot) -> None:
        await _settle(pilot)
        field = pilot.app.screen.query_one("#f-inputs--x--shape")
        field.focus()
        field.value = "16,abc"
        await pilot.press("enter")
        await _settle(pilot)

    assert snap_compare(_app(state, "sum_over_channels"), terminal_size=SIZE, run_before=run)


def test_dims_mean_spatial(snap_compare, state) -> None:
    assert snap_compare(_app(state, "mean_spatial"), terminal_size=SIZE, run_before=_steps(1))


def test_tiles_softmax(snap_compare, state) -> None:
    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=_steps(2))


def test_tiles_error_tile(snap_compare, state) -> None:
    async def run(pilot) -> None:
        await _steps(2)(pilot)
        pilot.app.screen.query_one("#tile-1").value = "7"
        await _settle(pilot)

    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=run)


def test_tiles_matmul_cube(snap_compare, state) -> None:
    assert snap_compare(_app(state, "matmul_tall"), terminal_size=SIZE, run_before=_steps(2))


def test_tiles_light_theme(snap_compare, state) -> None:
    assert snap_compare(_app(state, "sum_over_channels"), terminal_size=SIZE, run_before=_steps(2, "ctrl+t"))


def test_loops_scalar_mul_large(snap_compare, state) -> None:
    assert snap_compare(_app(state, "scalar_mul_large"), terminal_size=SIZE, run_before=_steps(3))


def test_loops_no_loop_needed(snap_compare, state) -> None:
    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=_steps(3))


def test_rule_browser(snap_compare, state) -> None:
    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=_steps(0, "f1"))


def test_restore_dialog(snap_compare, state) -> None:
    Autosave(state).write(Design(task=str(TASKS / "softmax_rows.py"), tile=[2, 4096], step="tiles"))
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    (state / "running.lock").write_text(f"{proc.pid}\n")
    assert os.path.exists(state / "autosave.json")
    assert snap_compare(_app(state), terminal_size=SIZE, run_before=_steps(0))


def test_kernel_softmax(snap_compare, state) -> None:
    assert snap_compare(_app(state, "softmax_rows"), terminal_size=SIZE, run_before=_steps(4))


def _light_then_steps(n: int):
    """The light theme first, then the steps: the Kernel step's code view highlights once, in the
    light theme (switched after it was drawn, the re-highlight raced the snapshot beside the sim tests)."""
    steps = _steps(n)

    async def run(pilot) -> None:
        await _settle(pilot)
        await pilot.press("ctrl+t")
        await steps(pilot)

    return run


def test_kernel_matmul_light(snap_compare, state) -> None:
    assert snap_compare(_app(state, "matmul_tall"), terminal_size=SIZE, run_before=_light_then_steps(4))
