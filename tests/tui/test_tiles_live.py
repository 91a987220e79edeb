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
        # the box says where the tiles come from: the pack's search, until the user edits one
        assert "from the pack's cube search" in str(screen.query_one("#cube-error").render())
        assert screen.query_one("#cube-k").value == "32,256"
        await ui.type_into(pilot, app, "#cube-k", "64,32")  # L1 < L0: the compiler refuses it
        assert "from the design's cube tiles" in str(screen.query_one("#cube-error").render())
        levels = {f.level for f in screen.query_one("#cube-findings", FindingsList).findings}
        assert "error" in levels
        await ui.type_into(pilot, app, "#cube-k", "x")
        assert "✗" in str(screen.query_one("#cube-error").render())


# ------------------------------------------------------------------ keys that arrive together
def _burst(app, *keys: str) -> None:
    """Hand keys to the app the way the terminal driver does when one read holds several of them
    (a fast typist, a busy machine): all queued at once, no pause between them. `pilot.press`
    waits for the app to go idle after each key, so it cannot show what issue 25 (7) found."""
    from textual import events

    for key in keys:
        event = events.Key(key, key if len(key) == 1 else None)
        event.set_sender(app)
        app._driver.send_message(event)


def _paste(app, text: str) -> None:
    """A bracketed paste, as the driver delivers it."""
    from textual import events

    event = events.Paste(text)
    event.set_sender(app)
    app._driver.send_message(event)


async def test_keys_typed_in_a_burst_all_land_in_order(make_app, ui) -> None:
    """Issue 25 (7): editing keys (backspace, arrows, home, end) bubbled to the App before they
    ran, so printable keys of the same burst overtook them: three backspaces then 256 in "384"
    left "384". Every key lands, in the order typed, and the live check follows the field."""
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        field = screen.query_one("#tile-1")
        field.focus()
        await ui.settle(pilot, app)
        for keys, want in (
            (("end", *["backspace"] * 5, "3", "8", "4"), "384"),
            ((*["backspace"] * 3, "2", "5", "6"), "256"),
            (("3", "8"), "25638"),
            (("home", "delete", "delete", "delete", "end", "5", "6"), "3856"),
            (("left", "left", "backspace", "backspace", "1", "2", "end", "backspace", "4"), "1254"),
            (("home", "right", "right", "delete", "delete", "0", "9", "6"), "12096"),
            (("home", "delete", "end", "backspace", "backspace"), "20"),
            (("4", "8"), "2048"),
        ):
            _burst(app, *keys)
            await ui.settle(pilot, app)
            assert field.value == want, keys
            assert screen.last_evaluation is not None and screen.last_evaluation.tile == (1, int(want))
            assert app.session.design.tile == [1, int(want)]


async def test_a_paste_lands_in_the_tile_field(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        screen = await _to_tiles(app, pilot, ui)
        field = screen.query_one("#tile-1")
        field.focus()  # the field's text is selected on focus: a paste replaces it
        await ui.settle(pilot, app)
        _paste(app, "2048")
        await ui.settle(pilot, app)
        assert field.value == "2048" and app.session.design.tile == [1, 2048]
        # keys and a paste in one burst: the paste lands between the keys, where it was typed
        _burst(app, "end", "backspace", "backspace", "backspace")
        _paste(app, "09")
        _burst(app, "6")
        await ui.settle(pilot, app)
        assert field.value == "2096" and app.session.design.tile == [1, 2096]
        assert screen.last_evaluation is not None and screen.last_evaluation.tile == (1, 2096)
