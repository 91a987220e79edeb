"""The tile step: live checks on every keystroke, errors in place, candidates by keyboard/mouse."""

from __future__ import annotations

from pypto_tui.screens.tiles_screen import TilesScreen
from pypto_tui.screens.widgets import FindingsList


async def _to_tiles(app, pilot, ui):
    await ui.settle(pilot, app)
    await pilot.press("ctrl+n")
    await ui.settle(pilot, app)
    await pilot.press("ctrl+n")
    await ui.settle(pilot, app)
    assert isinstance(app.screen, TilesScreen)
    return app.screen


async def test_typing_updates_findings_each_keystroke(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        assert [f.value for f in screen.tile_fields()] == ["1", "16384"]
        await ui.type_into(pilot, app, "#tile-1", "4096")
        ev = screen.last_evaluation
        assert ev is not None and ev.tile == (1, 4096)
        assert ev.prod == 4096 and ev.auto_tiles == 64 and ev.contiguous_bytes == 16384
        assert app.session.design.tile == [1, 4096]
        shown = screen.query_one("#findings", FindingsList).findings
        assert shown == tuple(sorted(ev.findings, key=lambda f: ["error", "warn", "info", "ok"].index(f.level)))
        # one more key: 4096 -> 40960 is over the budget: an error-level finding, shown first
        await pilot.press("0")
        await pilot.pause()
        shown = screen.query_one("#findings", FindingsList).findings
        assert shown[0].level == "error" and shown[0].rule == "P4.tile-budget"
        assert "P4.tile-budget" in str(screen.query_one("#explain").render())


async def test_wrong_tile_value_shows_error_in_place(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        before = list(app.session.design.tile or [1, 16384])
        for bad, expect in (("abc", "not a whole number"), ("0", "positive"), ("", "give a tile size"),
                            ("-5", "")):
            await ui.type_into(pilot, app, "#tile-1", bad)
            err = str(screen.query_one("#tile-error").render())
            assert err.startswith("✗"), (bad, err)
            assert expect in err, (bad, err)
            assert screen.query_one("#tile-1").has_class("-bad")
            assert screen.last_evaluation is None
            assert app.session.design.tile in (None, before)
        # Next is refused while the field is wrong, and the app is still alive
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, TilesScreen)
        assert "tile" in str(screen.query_one("#status").render())
        await ui.type_into(pilot, app, "#tile-1", "8192")
        assert str(screen.query_one("#tile-error").render()) == ""
        assert app.session.design.tile == [1, 8192]


async def test_error_level_tile_blocks_next(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        await ui.type_into(pilot, app, "#tile-1", "7")  # 28 B: not 32-byte aligned, a hard rule
        assert screen.last_evaluation is not None and not screen.last_evaluation.ok
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, TilesScreen)
        # softmax reduces along the tiled axis: the compiler itself refuses the tile (HW.concat-reduce-align)
        assert "HW.concat-reduce-align" in str(screen.query_one("#status").render())


async def test_candidate_table_keyboard_and_mouse(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        table = screen.query_one("#candidates")
        table.focus()
        await pilot.press("down", "enter")
        await pilot.pause()
        second = screen._plan.candidates[1].tile
        assert tuple(app.session.design.tile) == second
        assert [int(f.value) for f in screen.tile_fields()] == list(second)
        # a click on the third row picks it
        await pilot.click("#candidates", offset=(10, 4))
        await pilot.pause()
        await pilot.click("#candidates", offset=(10, 4))
        await pilot.pause()
        third = screen._plan.candidates[2].tile
        assert tuple(app.session.design.tile) == third
        # ctrl+d goes back to the recommended tile (stored as "no decision": None)
        await pilot.press("ctrl+d")
        await pilot.pause()
        assert app.session.design.tile is None
        assert app.session.pipeline.chosen_tile() == screen._plan.recommended.tile


async def test_matmul_has_cube_tiles(make_app, ui) -> None:
    app = make_app("matmul_tall")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        assert screen.query_one("#cube-box").display
        assert screen.query_one("#cube-findings", FindingsList).findings
        await ui.type_into(pilot, app, "#cube-k", "64,32")  # L1 < L0: the compiler refuses it
        levels = {f.level for f in screen.query_one("#cube-findings", FindingsList).findings}
        assert "error" in levels
        await ui.type_into(pilot, app, "#cube-k", "x")
        assert "✗" in str(screen.query_one("#cube-error").render())
