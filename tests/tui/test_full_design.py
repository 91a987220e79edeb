"""Drive whole designs from the task file to the exported module, as a user would (keys only)."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from pypto_tui.design import Design, kernel_of
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import ConfirmDialog, PathDialog
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.tiles_screen import TilesScreen


async def _next(pilot, app, ui, expect):
    await pilot.press("ctrl+n")
    await ui.settle(pilot, app)
    assert isinstance(app.screen, expect), (type(app.screen).__name__, str(app.screen.query_one("#status").render()))
    return app.screen


async def _export(pilot, app, ui, target: Path) -> None:
    """Type the path relative to the working folder (the test's tmp_path), as a user mostly would:
    Pilot spends about 90 ms a key, and a tmp_path is a hundred keys."""
    await pilot.press("e")
    await pilot.pause()
    assert isinstance(app.screen, PathDialog)
    await ui.type_into(pilot, app, "#path", str(target.relative_to(Path.cwd())))
    await pilot.press("enter")
    await ui.settle(pilot, app)


CASES = {
    # task: (tile typed per axis or None for the recommended one, loop choice, expected design)
    "softmax_rows": ({1: "8192"}, None, {"tile": [1, 8192], "loop_count": None}),
    "sum_over_channels": ({1: "8"}, "recommended", {"tile": [1, 8, 8, 256]}),  # recommended (1, 4, 8, 256)
    "scalar_mul_large": (None, 32, {"tile": None, "loop_count": 32}),
}


@pytest.mark.parametrize("task", sorted(CASES))
async def test_full_design_to_export(task, make_app, ui, tmp_path, state, monkeypatch) -> None:
    tile_keys, loop, expected = CASES[task]
    monkeypatch.chdir(tmp_path)
    app = make_app(task)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        contract = app.screen
        assert isinstance(contract, ContractScreen) and contract.contract is not None
        assert not contract.contract.unknown
        dims = await _next(pilot, app, ui, DimsScreen)
        assert dims.plan is not None and dims.plan.kernel_rank is not None
        tiles = await _next(pilot, app, ui, TilesScreen)
        for axis, text in (tile_keys or {}).items():
            await ui.type_into(pilot, app, f"#tile-{axis}", text)
        assert tiles.last_error is None and tiles.last_evaluation is not None
        loops = await _next(pilot, app, ui, LoopsScreen)
        plan = loops.plan
        if task == "scalar_mul_large":
            assert plan.needs_loop and "auto_tiles" in plan.reason
        if task == "softmax_rows":
            assert not plan.needs_loop
        if isinstance(loop, int):
            table = loops.query_one("#loop-table")
            table.focus()
            keys = list(loops._rows)
            table.move_cursor(row=keys.index(f"{loop}:divides") if f"{loop}:divides" in keys
                              else next(i for i, k in enumerate(keys) if k.startswith(f"{loop}:")))
            await pilot.press("enter")
            await ui.settle(pilot, app)
            assert app.session.design.loop_count == loop
        kernel = await _next(pilot, app, ui, KernelScreen)
        source = kernel.source
        assert source and "class ModelNew" in source
        ast.parse(source)
        assert kernel.query_one("#code").text == source
        # the design holds the decisions, and the pipeline agrees with what the screen shows
        d = app.session.design
        for key, value in expected.items():
            assert getattr(d, key) == value, (key, getattr(d, key))
        assert d.step == "kernel"
        assert kernel_of(app.session.pipeline).source == source
        # copy, then export to a new file
        await pilot.press("c")
        await pilot.pause()
        assert app.clipboard == source
        out = tmp_path / "out" / f"{task}_kernel.py"
        await _export(pilot, app, ui, out)
        assert out.read_text(encoding="utf-8") == source
        assert kernel.exported is not None and kernel.exported.resolve() == out
        # exporting again to the same path asks first; "n" keeps the file as it was
        out.write_text("# mine\n", encoding="utf-8")
        await _export(pilot, app, ui, out)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("n")
        await ui.settle(pilot, app)
        assert out.read_text(encoding="utf-8") == "# mine\n"
        await _export(pilot, app, ui, out)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("y")
        await ui.settle(pilot, app)
        assert out.read_text(encoding="utf-8") == source
        await pilot.press("ctrl+s")  # no session file yet: asks for one
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        session_file = tmp_path / "design.json"
        await ui.type_into(pilot, app, "#path", session_file.name)
        await pilot.press("enter")
        await ui.settle(pilot, app)
    saved = Design.load(session_file)
    assert saved.to_dict() == d.to_dict()
    auto = json.loads((state / "autosave.json").read_text())
    assert auto["step"] == "kernel" and auto["task"] == d.task
