"""Issue 15 in the app: a second task from step 1, corrupt and shared autosaves, and the rough edges
(the loop star, typing in the rule browser, a tile of 0, the install hint's [sim])."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pypto_tui.design import Design
from pypto_tui.errors import InputError
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import OpenTaskDialog
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.rules_screen import RuleBrowserScreen
from pypto_tui.screens.session import Autosave, read_design


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def spy_notifications(app: PyptoApp) -> list[tuple[str, dict[str, object]]]:
    """Every notification the app shows, as (message, keywords), kept even after its toast expires."""
    shown: list[tuple[str, dict[str, object]]] = []
    real_notify = app.notify

    def spy(message: str, **kw: object) -> None:
        shown.append((message, kw))
        real_notify(message, **kw)  # type: ignore[arg-type]

    app.notify = spy  # type: ignore[method-assign]
    return shown


# ------------------------------------------------------------------------------- step 1, twice
async def test_second_task_from_step_1_shows_the_new_contract(make_app, ui) -> None:
    """ctrl+o, another task, Enter, from the contract step: was DuplicateIds, a blank form and the
    old task's summary (3 times in 3)."""
    app = make_app("elu")
    shown = spy_notifications(app)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert app.screen.query_one("#f-family").value == "elementwise"
        for name, family, shape in (("softmax_rows", "softmax", "16,16384"), ("sum_over_channels", "reduction",
                                                                              "16,64,256,256")):
            await pilot.press("ctrl+o")
            await pilot.pause()
            assert isinstance(app.screen, OpenTaskDialog)
            await ui.type_into(pilot, app, "#path", ui.task(name))
            await pilot.press("enter")
            await ui.settle(pilot, app)
            screen = app.screen
            assert isinstance(screen, ContractScreen)
            assert screen.query_one("#f-family").value == family
            assert screen.query_one("#f-inputs--x--shape").value == shape
            assert f"{name}.py" in str(screen.query_one("#unknowns").render())
            assert "internal error" not in str(screen.query_one("#status").render())
            assert len(screen.query("#blk-f-family")) == 1
    assert not [m for m, kw in shown if kw.get("severity") == "error" or "internal error" in m]
    assert [m for m, _ in shown if m.startswith("opened ")] == ["opened softmax_rows.py", "opened sum_over_channels.py"]


# ------------------------------------------------------------------------------- corrupt autosaves
CORRUPT = {
    "random bytes": bytes(range(256)) * 8,                            # was UnicodeDecodeError
    "100000 brackets": b"[" * 100_000,                                # was RecursionError
    "huge integer": b'{"task": null, "loop_count": ' + b"9" * 5000 + b"}",  # was an error after a key
    "wrong types": json.dumps({"task": 5, "tile": "abc"}).encode(),
    "tile of floats": json.dumps({"task": None, "tile": [1e400]}).encode(),
}


@pytest.mark.parametrize("content", CORRUPT.values(), ids=list(CORRUPT))
async def test_corrupt_autosave_is_set_aside_and_the_app_starts(make_app, ui, state, content: bytes) -> None:
    (state / "autosave.json").write_bytes(content)
    (state / "running.lock").write_text(f"{_dead_pid()}\n")
    app = make_app("elu")
    assert app.leftover is None
    notices = list(app.autosaver.notices)
    assert len(notices) == 1 and "set aside as autosave.corrupt-" in notices[0]
    aside = list(state.glob("autosave.corrupt-*.json"))
    assert len(aside) == 1 and aside[0].read_bytes() == content  # kept for the user, not deleted
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen)
        assert app.screen.contract is not None and app.screen.contract.op == "elu"
    assert not (state / "running.lock").exists()


@pytest.mark.parametrize("content", CORRUPT.values(), ids=list(CORRUPT))
def test_corrupt_session_file_is_one_input_error(tmp_path: Path, content: bytes) -> None:
    bad = tmp_path / "s.json"
    bad.write_bytes(content)
    with pytest.raises(InputError) as exc:
        read_design(bad)
    assert "\n" not in str(exc.value) and str(bad) in str(exc.value)


def test_ui_with_a_corrupt_session_is_exit_2(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from pypto_tui.cli import app

    bad = tmp_path / "s.json"
    bad.write_bytes(b"[" * 100_000)
    r = CliRunner().invoke(app, ["ui", "--session", str(bad)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "nests too deeply" in r.stderr


# ------------------------------------------------------------------------------- two instances
def test_two_instances_keep_their_own_autosave(tmp_path: Path, ui) -> None:
    first_proc = subprocess.Popen(["sleep", "60"])  # stands for a running first instance
    try:
        first = Autosave(tmp_path, pid=first_proc.pid)
        first.start()
        first.write(Design(task=ui.task("elu"), tile=[8192], step="tiles"))
        assert first.path.name == "autosave.json"
        second = Autosave(tmp_path)  # this process: the second instance
        assert second.leftover() is None  # the first one is alive: nothing to restore
        second.start()
        assert second.path.name == f"autosave-{os.getpid()}.json"
        second.write(Design(task=ui.task("softmax_rows"), tile=[1, 8192], step="loops"))
        assert read_design(first.path).task.endswith("elu.py")  # was: overwritten by the second
    finally:
        first_proc.kill()
        first_proc.wait()
    third = Autosave(tmp_path, pid=_dead_pid() + 100000)
    left = third.leftover()
    assert left is not None and left.task.endswith("elu.py") and left.tile == [8192]
    third.start()
    assert third.path.name != "autosave.json"  # the first one's work waits to be offered
    third.forget_leftover()
    assert not (tmp_path / "autosave.json").exists() and not (tmp_path / "running.lock").exists()
    assert read_design(second.path).task.endswith("softmax_rows.py")  # still running: untouched
    second.finish()
    assert not second.path.exists() and not second.lock.exists()


def test_two_real_app_processes_then_kill_the_first(tmp_path: Path, ui) -> None:
    """Two real app processes on one state folder: the first is killed with SIGKILL, and its
    design is what the next start offers (the second one's edits did not overwrite it)."""
    state = tmp_path / "state"
    script = (
        "import sys, asyncio, json\n"
        "from pypto_tui.screens.app import PyptoApp\n"
        "app = PyptoApp(task=sys.argv[1], blink=False)\n"
        "async def main():\n"
        "    async with app.run_test(size=(120, 40)) as pilot:\n"
        "        await app.workers.wait_for_complete(); await pilot.pause()\n"
        "        for _ in range(int(sys.argv[2])):\n"
        "            await pilot.press('ctrl+n'); await app.workers.wait_for_complete(); await pilot.pause()\n"
        "        while json.loads(app.autosaver.path.read_text())['step'] != app.session.design.step:\n"
        "            await pilot.pause(0.05)  # the autosave follows the frame that shows the step\n"
        "        print('ready', app.autosaver.path.name, flush=True)\n"
        "        await asyncio.sleep(600)\n"
        "asyncio.run(main())\n"
    )
    env = {**os.environ, "PYPTO_TUI_STATE_DIR": str(state)}

    def start(task: str, steps: int) -> tuple[subprocess.Popen[str], str]:
        proc = subprocess.Popen([sys.executable, "-c", script, ui.task(task), str(steps)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        deadline, line = time.monotonic() + 120, ""
        while time.monotonic() < deadline and "ready" not in line:
            line = proc.stdout.readline()  # type: ignore[union-attr]
        assert "ready" in line
        return proc, line.split()[1]

    first, first_slot = start("softmax_rows", 2)
    try:
        second, second_slot = start("elu", 1)
    except BaseException:
        first.kill()
        raise
    try:
        assert first_slot == "autosave.json" and second_slot == f"autosave-{second.pid}.json"
        first.send_signal(signal.SIGKILL)
        first.wait()
        left = Autosave(state).leftover()
        assert left is not None and left.task.endswith("softmax_rows.py") and left.step == "tiles"
        assert read_design(state / second_slot).task.endswith("elu.py")
    finally:
        for p in (first, second):
            p.kill()
            p.wait()


# ------------------------------------------------------------------------------- rough edges
async def test_loop_star_stays_on_the_packs_pick(make_app, ui) -> None:
    app = make_app("scalar_mul_large")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 3)
        screen = app.screen
        assert isinstance(screen, LoopsScreen)
        table = screen.query_one("#loop-table")

        def marks() -> dict[str, str]:
            return {str(table.get_row(k)[1]).strip(): str(table.get_row(k)[0]) for k in table.rows}

        from pypto_tui.design import Pipeline
        from pypto_tui.kb import bundled_pack_dir, load_pack

        task = Path(__file__).resolve().parents[1] / "fixtures" / "tasks" / "scalar_mul_large.py"
        choice = Pipeline(load_pack(bundled_pack_dir()), Design(task=str(task))).loop_choice()
        assert choice is not None
        pick = str(choice.candidate.loop_count)  # the pack's pick (ranking = auto: 128)
        assert marks()[pick] == "▶★"
        await ui.type_into(pilot, app, "#custom-count", "1")  # 1: an ERROR row (4096 tiles per pass)
        await ui.settle(pilot, app)
        m = marks()
        assert m["1"] == "▶" and m[pick] == "★"  # the star stays on the pack's pick, not on the chosen ERROR row


async def test_rule_browser_filters_as_you_type(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, RuleBrowserScreen)
        for ch in "contig":
            await pilot.press(ch)
        await pilot.pause()
        assert app.screen.query_one("#rule-filter").value == "contig"
        ids = {str(k.value) for k in app.screen.query_one("#rule-table").rows}
        assert "O1.contiguous-1kb" in ids and "P4.tile-budget" not in ids


async def test_install_hint_keeps_the_sim_extra(make_app, ui, monkeypatch: pytest.MonkeyPatch) -> None:
    import pypto_tui.screens.sim_support as sim_support

    msg = "the simulator needs pypto 0.2.0: pip install 'pypto-tui[sim]'"
    monkeypatch.setattr(sim_support, "sim_unavailable", lambda: msg)
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 2)
        await pilot.press("ctrl+r")
        await pilot.pause()
        shown = [n.message for n in app._notifications]
        assert msg in shown and all(not n.markup for n in app._notifications)


def test_app_refuses_a_fifo_task(tmp_path: Path) -> None:
    fifo = tmp_path / "t.py"
    os.mkfifo(fifo)
    app = PyptoApp(task=None, state=tmp_path / "st", blink=False)
    with pytest.raises(InputError, match="FIFO"):
        app.session.set_task(fifo)


async def test_the_app_asks_before_it_first_runs_a_task_file(make_app, ui, monkeypatch) -> None:
    """Issue 25 (2): opening a task only reads it; the self-check runs its code only after a yes,
    asked once per task file per app run. No runs the nothing (the baseline runner is never called)."""
    from pypto_tui.contract import selfcheck
    from pypto_tui.screens.dialogs import ConfirmDialog

    ran: list[str] = []

    def fake_self_check(contract, task, **kw):
        ran.append(task)
        return selfcheck.SelfCheckResult(status="agree", message="stand-in")

    monkeypatch.setattr(selfcheck, "self_check", fake_self_check)
    app = make_app("softmax_rows", trust_task_code=False)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog) and "softmax_rows.py" in str(app.screen.question)
        await pilot.press("n")
        await ui.settle(pilot, app)
        assert ran == [] and any("was not run" in n.message for n in app._notifications)
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await ui.settle(pilot, app)
        assert len(ran) == 1
        await pilot.press("ctrl+r")  # agreed once: not asked again for this file
        await ui.settle(pilot, app)
        assert not isinstance(app.screen, ConfirmDialog) and len(ran) == 2


async def test_restoring_a_session_on_a_hostile_task_does_not_crash(make_app, ui, state, tmp_path) -> None:
    """A session pointing at a file that crashed libcst (10,000 nested parentheses): restored, the
    contract step says why in one line and the app stays up."""
    task = tmp_path / "deep.py"
    task.write_text("import torch\n\ndef get_inputs():\n    return [torch.randn(" + "(" * 10_000 + "16"
                    + ")" * 10_000 + ")]\n")
    Autosave(state).write(Design(task=str(task), step="contract"))
    (state / "running.lock").write_text(f"{_dead_pid()}\n")
    app = make_app()
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("r")
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen)
        status = str(screen.query_one("#status").render())
        assert "nests expressions too deeply" in status and "internal error" not in status


async def test_a_tile_of_0_is_refused_not_called_clean(make_app, ui) -> None:
    """A tile of 0 showed "(0,) has 0" beside a Findings panel that said "no findings"."""
    from pypto_tui.screens.tiles_screen import TilesScreen

    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 2)
        screen = app.screen
        assert isinstance(screen, TilesScreen)
        await ui.type_into(pilot, app, "#tile-1", "0")
        await ui.settle(pilot, app)
        error = str(screen.query_one("#tile-error").render())
        assert "positive whole number" in error and "0 covers nothing" in error and "has 0" not in error
        findings = screen.query_one("#findings")
        assert findings.findings == ()
        assert "not evaluated" in str(findings.get_option_at_index(0).prompt)


async def test_quitting_the_app_ends_a_running_self_check(make_app, ui, tmp_path) -> None:
    """Issue 25: the app ended during a self-check left the baseline runner behind; on unmount the
    app now stops every runner procgroup is waiting on, and the waiting thread returns at once."""
    import threading

    from pypto_tui import procgroup

    done: list[object] = []
    waiter = threading.Thread(target=lambda: done.append(procgroup.run_in_group(
        [sys.executable, "-c", "import time; time.sleep(120)"], timeout=300, cwd=tmp_path)), daemon=True)
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        waiter.start()
        deadline = time.monotonic() + 20
        while not procgroup._LIVE and time.monotonic() < deadline:
            await pilot.pause(0.1)
        assert procgroup._LIVE, "the runner did not start"
        started = time.monotonic()
    waiter.join(timeout=30)
    assert not waiter.is_alive() and done and time.monotonic() - started < 30
