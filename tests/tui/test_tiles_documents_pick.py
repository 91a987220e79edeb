"""The Tiles step under ranking = "auto" (issue 22): where the estimate decides, the documents' pick
stands beside the recommendation with its rules and the time the estimate expects it to lose."""

from __future__ import annotations

from pypto_tui.screens.tiles_screen import TilesScreen


async def test_the_documents_pick_is_shown_beside_the_estimates(make_app, ui) -> None:
    app = make_app("max_over_dim")
    async with app.run_test(size=ui.size) as pilot:
        for _ in range(2):
            await ui.settle(pilot, app)
            await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, TilesScreen)
        why = str(screen.query_one("#tile-why").render())
        assert "recommended (1, 32, 256)" in why
        assert "documents' pick (1, 16, 256)" in why and "O1.reduce-sweet-spot" in why and "the estimate expects" in why


async def test_no_documents_pick_line_where_the_documents_decide(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        for _ in range(2):
            await ui.settle(pilot, app)
            await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        assert "documents' pick" not in str(app.screen.query_one("#tile-why").render())
