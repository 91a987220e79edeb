"""Autosave on every change, restore after a crash (also a real kill -9), --session, stale steps."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from pypto_tui.design import Design
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.dialogs import RestoreDialog
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.session import Autosave, Session, state_dir
from pypto_tui.screens.tiles_screen import TilesScreen


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_state_dir_follows_env(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PYPTO_TUI_STATE_DIR", str(tmp_path / "here"))
    assert state_dir() == tmp_path / "here"
    monkeypatch.delenv("PYPTO_TUI_STATE_DIR")
    assert "pypto-tui" in str(state_dir())


def test_autosave_leftover_only_after_a_crash(tmp_path, ui) -> None:
    a = Autosave(tmp_path)
    assert a.leftover() is None
    a.write(Design(task=ui.task("elu"), tile=[8192], step="tiles"))
    a.lock.write_text(f"{os.getpid()}\n")
    assert a.leftover() is None  # our own lock: not a crash
    a.lock.write_text(f"{_dead_pid()}\n")
    got = a.leftover()
    assert got is not None and got.tile == [8192] and got.step == "tiles"
    a.finish()
    assert a.leftover() is None  # a clean exit leaves no lock
    a.lock.write_text("garbage")
    assert a.leftover() is None


def test_session_marks_later_steps_stale(ui) -> None:
    s = Session(Design(task=ui.task("softmax_rows"), step="kernel"))
    assert s.finished == {"contract", "dims", "tiles", "loops"}
    s.change("tiles", lambda d: setattr(d, "tile", [1, 8192]))
    assert s.stale == {"loops", "kernel"}
    assert "tiles" in s.finished
    s.finish("loops")
    assert s.stale == {"kernel"}
    assert not s.change("tiles", lambda d: setattr(d, "tile", [1, 8192]))  # no change, nothing stale


def test_contract_change_of_shape_drops_tile(ui) -> None:
    s = Session(Design(task=ui.task("softmax_rows"), tile=[1, 8192], loop_count=16, step="loops"))
    s.change("contract", lambda d: d.contract_edits.update({"inputs.x.shape": [32, 16384]}))
    assert s.design.tile is None and s.design.loop_count is None
    assert {"dims", "tiles", "loops"} <= s.stale


async def test_autosave_appears_and_follows_edits(make_app, ui, state) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        auto = state / "autosave.json"
        lock = state / "running.lock"
        assert auto.is_file() and lock.is_file()
        assert json.loads(auto.read_text())["task"].endswith("softmax_rows.py")
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        await ui.type_into(pilot, app, "#tile-1", "8192")
        saved = json.loads(auto.read_text())
        assert saved["tile"] == [1, 8192] and saved["step"] == "tiles"
    assert not (state / "running.lock").exists()  # clean exit


async def test_restore_after_crash(make_app, ui, state) -> None:
    Autosave(state).write(Design(task=ui.task("softmax_rows"), tile=[2, 4096], step="tiles"))
    (state / "running.lock").write_text(f"{_dead_pid()}\n")
    app = make_app()  # no task: the restore dialog comes first
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, RestoreDialog)
        await pilot.press("r")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, TilesScreen)
        assert app.session.design.tile == [2, 4096]
        assert [f.value for f in app.screen.tile_fields()] == ["2", "4096"]


async def test_discard_after_crash(make_app, ui, state) -> None:
    Autosave(state).write(Design(task=ui.task("softmax_rows"), tile=[2, 4096], step="tiles"))
    (state / "running.lock").write_text(f"{_dead_pid()}\n")
    app = make_app("elu")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, RestoreDialog)
        await pilot.press("d")
        await ui.settle(pilot, app)
        assert app.session.design.task.endswith("elu.py")
        assert app.session.design.tile is None


async def test_session_file_reopens(make_app, ui, tmp_path) -> None:
    path = tmp_path / "mine.json"
    Design(task=ui.task("softmax_rows"), tile=[1, 8192], step="loops").save(path)
    app = make_app(session=path)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, LoopsScreen)
        assert app.screen.plan is not None and app.screen.plan.tile == (1, 8192)
        await pilot.press("1")  # digits jump to finished steps
        await ui.settle(pilot, app)
        assert app.current_mode == "contract"
        await pilot.press("ctrl+s")  # save goes back to the session file
        await ui.settle(pilot, app)
    assert Design.load(path).step == "contract"


async def test_tile_edit_marks_loops_and_kernel_stale_and_recomputes(make_app, ui) -> None:
    app = make_app("scalar_mul_large")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        for _ in range(3):
            await pilot.press("ctrl+n")
            await ui.settle(pilot, app)
        loops = app.screen
        assert isinstance(loops, LoopsScreen)
        first = loops.plan
        assert first is not None and first.needs_loop
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        assert app.current_mode == "kernel"
        await pilot.press("3")
        await ui.settle(pilot, app)
        await ui.type_into(pilot, app, "#tile-0", "4096")
        assert app.session.stale >= {"loops", "kernel"}
        tabs = {t.step: t for t in app.screen.query("StepTab")}
        assert tabs["loops"].has_class("-stale") and tabs["kernel"].has_class("-stale")
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        loops = app.screen
        assert isinstance(loops, LoopsScreen)
        assert loops.plan.tile == (4096,) and loops.plan is not first
        assert loops.query_one("#stale-banner").display
        assert loops.plan.recommended.auto_tiles_per_iter <= 2048
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        assert "loops" not in app.session.stale
        assert app.session.pipeline.chosen_tile() == (4096,)


def test_kill_9_then_restore_offered(tmp_path, ui) -> None:
    """A real app process, killed with SIGKILL mid-design, leaves an autosave the next run offers."""
    state = tmp_path / "state"
    script = (
        "import sys, asyncio, json\n"
        "from pypto_tui.screens.app import PyptoApp\n"
        "app = PyptoApp(task=sys.argv[1], blink=False)\n"
        "async def main():\n"
        "    async with app.run_test(size=(120, 40)) as pilot:\n"
        "        await app.workers.wait_for_complete(); await pilot.pause()\n"
        "        await pilot.press('ctrl+n'); await pilot.pause(); await pilot.press('ctrl+n')\n"
        "        await app.workers.wait_for_complete(); await pilot.pause()\n"
        "        while json.loads(app.autosaver.path.read_text())['step'] != 'tiles':\n"
        "            await pilot.pause(0.05)  # the autosave follows the frame that shows the step\n"
        "        print('ready', flush=True)\n"
        "        await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYPTO_TUI_STATE_DIR": str(state)}
    proc = subprocess.Popen([sys.executable, "-c", script, ui.task("softmax_rows")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.monotonic() + 120
        line = ""
        while time.monotonic() < deadline and "ready" not in line:
            line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "ready" in line
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    left = Autosave(state).leftover()
    assert left is not None and left.step == "tiles" and left.task.endswith("softmax_rows.py")
    assert PyptoApp(state=state, blink=False).leftover is not None


def test_bad_session_file_is_an_input_error(tmp_path) -> None:
    import pytest

    from pypto_tui.errors import InputError

    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON"):
        PyptoApp(session=bad, state=tmp_path / "state")
    with pytest.raises(InputError, match="does not exist"):
        PyptoApp(session=tmp_path / "missing.json", state=tmp_path / "state")


async def test_kb_option_loads_that_pack(make_app, ui) -> None:
    minimal = ui.tasks.parent / "kb_minimal"
    app = make_app("softmax_rows", kb=minimal)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert app.session.kb.path == minimal
        assert app.session.design.kb == str(minimal)
        assert "pack" in app.screen.sub_title


async def test_contract_edit_rebuilds_the_tile_step(make_app, ui) -> None:
    """A new input shape upstream: the tile fields are rebuilt for it and the tile recomputed."""
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        for _ in range(2):
            await pilot.press("ctrl+n")
            await ui.settle(pilot, app)
        await ui.type_into(pilot, app, "#tile-1", "8192")
        assert app.session.design.tile == [1, 8192]
        await pilot.press("ctrl+b", "ctrl+b")
        await ui.settle(pilot, app)
        await ui.type_into(pilot, app, "#f-inputs--x--shape", "4,8,4096")
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert app.session.design.tile is None  # the old tile means nothing for a rank-3 input
        assert {"dims", "tiles"} <= app.session.stale
        for _ in range(2):
            await pilot.press("ctrl+n")
            await ui.settle(pilot, app)
        tiles = app.screen
        assert isinstance(tiles, TilesScreen)
        assert tiles._geometry.shape == (4, 8, 4096)
        assert len(tiles.tile_fields()) == 3
        assert tuple(int(f.value) for f in tiles.tile_fields()) == app.session.pipeline.chosen_tile()
        assert tiles.last_error is None


def test_a_one_operator_task_the_graph_splits_shows_its_kernels_one_at_a_time() -> None:
    """x.transpose(1, 3) is read as one operator, but only the graph's three neighbouring swaps have a
    layout: the steps show those kernels, as `contract`, `tile` and `scaffold` do (design.task_kernels)."""
    from pathlib import Path

    from pypto_tui.design import task_kernels

    task = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "far_swap.py"
    s = Session(Design(task=str(task), step="dims"))
    stages = s.kernels()
    assert [st.ops for st in stages] == [k.ops for k in task_kernels(s.pipeline).kernels] == ["transpose"] * 3
    assert s.step_pipeline is stages[0].pipeline and s.step_pipeline.dims().strategy == "swap-blocks"
