"""The Loops step's table title says who picked the starred row (issue 22: it said "documents'
order" also when the cost estimate decided)."""

from __future__ import annotations

import pytest

from pypto_tui.screens.loops_screen import LoopsScreen


@pytest.mark.parametrize(("task", "picker"), [("scalar_mul_large", "the cost estimate's pick"),
                                              ("softmax_rows", "the documents' pick")])
async def test_the_table_title_names_who_picked_the_star(task, picker, make_app, ui) -> None:
    app = make_app(task)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        for _ in range(3):
            await pilot.press("ctrl+n")
            await ui.settle(pilot, app)
        assert isinstance(app.screen, LoopsScreen)
        ranking = app.session.pipeline.loop_plan().ranking
        assert ranking == ("estimate" if "estimate" in picker else "rules")
        assert picker in str(app.screen.query_one("#loop-table").border_title)
