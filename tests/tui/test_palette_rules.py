"""The command palette's actions, the rule browser, themes, opening a task from the picker."""

from __future__ import annotations

from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import OpenTaskDialog, PathDialog
from pypto_tui.screens.rules_screen import RuleBrowserScreen
from pypto_tui.screens.session import list_examples


def test_bundled_examples_ship_with_the_pack() -> None:
    names = {p.stem for p in list_examples()}
    assert {"softmax_rows", "sum_over_channels", "scalar_mul_large"} <= names
    assert len(names) == 16


async def test_picker_opens_a_bundled_example(make_app, ui) -> None:
    app = make_app()
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, OpenTaskDialog)  # no task: the picker comes up
        ol = app.screen.query_one("#examples")
        await pilot.press("down")  # from the path field into the list
        await pilot.pause()
        assert app.screen.focused is ol and ol.highlighted == 0
        names = [ol.get_option_at_index(i).id for i in range(ol.option_count)]
        idx = next(i for i, n in enumerate(names) if n.endswith("softmax_rows.py"))
        ol.highlighted = idx
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen)
        assert app.session.design.task.endswith("softmax_rows.py")
        assert app.screen.contract.op == "softmax"


async def test_first_open_dialog_types_into_the_path_field(make_app, ui) -> None:
    """Issue 25 (8): the first dialog had the examples focused; a typed path was lost and Enter
    opened the highlighted example (batch_norm.py). Now the keys land in the path field."""
    app = make_app()
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, OpenTaskDialog)
        assert app.screen.focused is app.screen.query_one("#path")
        await pilot.press("enter")  # nothing typed: says what to do, opens nothing
        await pilot.pause()
        assert isinstance(app.screen, OpenTaskDialog)
        assert "give a path" in str(app.screen.query_one("#path-error").render())
        await pilot.press(*ui.task("elu"))
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen)
        assert app.session.design.task == ui.task("elu")


async def test_open_dialog_reports_missing_file_in_place(make_app, ui) -> None:
    app = make_app("elu")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, OpenTaskDialog)
        await ui.type_into(pilot, app, "#path", "/no/such/task.py")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, OpenTaskDialog)
        assert "does not exist" in str(app.screen.query_one("#path-error").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ContractScreen)


async def test_palette_runs_app_commands(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "rule browser":
            await pilot.press(ch if ch != " " else "space")
        await ui.settle(pilot, app)
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, RuleBrowserScreen)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("ctrl+p")
        await pilot.pause()
        for ch in "save session as":
            await pilot.press(ch if ch != " " else "space")
        await ui.settle(pilot, app)
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, PathDialog)
        await pilot.press("escape")
        await pilot.pause()


async def test_rule_browser_filters_and_explains(make_app, ui) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("f1")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RuleBrowserScreen)
        table = screen.query_one("#rule-table")
        assert table.row_count == len(app.session.kb.rules)
        await ui.type_into(pilot, app, "#rule-filter", "contiguous")
        assert 0 < table.row_count < len(app.session.kb.rules)
        assert "O1.contiguous-1kb" in str(screen.query_one("#rule-detail").render()) or any(
            "contiguous" in str(table.get_row_at(i)) for i in range(table.row_count))
        await ui.type_into(pilot, app, "#rule-filter", "zzzz-no-rule")
        assert table.row_count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ContractScreen)


async def test_theme_toggle(make_app, ui) -> None:
    app = make_app("elu")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        dark = app.current_theme.dark
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.current_theme.dark is not dark
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.current_theme.dark is dark


async def test_switch_pack_refuses_bad_folder_in_place(make_app, ui, tmp_path) -> None:
    app = make_app("elu")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        app.action_switch_pack()
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        await ui.type_into(pilot, app, "#path", str(tmp_path))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        assert "pack.toml" in str(app.screen.query_one("#path-error").render())
        minimal = ui.tasks.parent / "kb_minimal"
        await ui.type_into(pilot, app, "#path", str(minimal))
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert not isinstance(app.screen, PathDialog)
        assert app.session.kb.path == minimal
