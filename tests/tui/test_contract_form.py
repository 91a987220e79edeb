"""The contract step: prefilled from the task, unknown fields block Next, wrong values in place."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dialogs import OpenTaskDialog
from pypto_tui.screens.dims_screen import DimsScreen

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"


async def test_prefilled_from_task(make_app, ui) -> None:
    app = make_app("sum_over_channels")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen)
        assert screen.contract.family == "reduction"
        assert screen.query_one("#f-inputs--x--shape").value == "16,64,256,256"
        assert screen.query_one("#f-init_params--dim").value == "1"
        assert screen.query_one("#f-reduction--axes").value == "1"
        assert screen.query_one("#f-reduction--keepdim").value is True
        assert screen.query_one("#f-family").value == "reduction"
        assert app.session.design.contract_edits == {}  # building the form is not an edit


async def test_wrong_value_shown_in_place_never_crashes(make_app, ui) -> None:
    app = make_app("sum_over_channels")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        await ui.type_into(pilot, app, "#f-inputs--x--shape", "16,abc")
        await pilot.press("enter")
        await pilot.pause()
        err = str(screen.query_one("#err-f-inputs--x--shape").render())
        assert "not a whole number" in err
        assert screen.query_one("#blk-f-inputs--x--shape").has_class("-invalid")
        assert "inputs.x.shape" not in app.session.design.contract_edits
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, ContractScreen)  # refused, with the reason in the status line
        assert "inputs.x.shape" in str(screen.query_one("#status").render())
        await ui.type_into(pilot, app, "#f-inputs--x--dtype", "fp99")
        assert "use one of" in str(screen.query_one("#err-f-inputs--x--dtype").render())
        # a correct value clears the error; Enter makes it an edit the core re-derives from
        await ui.type_into(pilot, app, "#f-inputs--x--dtype", "fp32")
        await ui.type_into(pilot, app, "#f-inputs--x--shape", "8,64,256,256")
        assert "inputs.x.shape" not in app.session.design.contract_edits  # typed, not yet applied
        await pilot.press("enter")
        await pilot.pause()
        assert app.session.design.contract_edits.get("inputs.x.shape") == [8, 64, 256, 256]
        assert screen.contract.output_shape == (8, 1, 256, 256)
        assert str(screen.query_one("#err-f-inputs--x--shape").render()) == ""


async def test_unknown_fields_highlighted_and_block_next(make_app, ui, tmp_path) -> None:
    task = tmp_path / "mystery.py"
    task.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n\n"
        "    def forward(self, x):\n        return torch.special.frobnicate(x, dim=1)\n\n\n"
        "def get_inputs():\n    return [torch.randn(16, 1024)]\n\n\n"
        "def get_init_inputs():\n    return []\n",
        encoding="utf-8",
    )
    app = make_app()
    app.session.set_task(task)
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        if isinstance(app.screen, OpenTaskDialog):
            await pilot.press("escape")
            await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen)
        unknown = dict(screen.contract.unknown)
        assert unknown, "an unrecognised op leaves fields unknown"
        highlighted = list(screen.query(".fblock.-unknown"))
        assert highlighted
        assert "to fill in" in str(screen.query_one("#unknowns").render())
        await pilot.press("ctrl+n")
        await pilot.pause()
        assert isinstance(app.screen, ContractScreen)
        assert "unknown" in str(screen.query_one("#status").render())


async def test_next_to_dims_and_pick_strategy(make_app, ui) -> None:
    app = make_app("mean_spatial")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, DimsScreen)
        plan = screen.plan
        assert plan is not None and plan.kernel_rank is not None
        table = screen.query_one("#dims-alts")
        assert table.row_count >= 1
        if table.row_count > 1:
            table.focus()
            other = next(k for k in screen._alt_ids if k != plan.strategy)
            idx = list(screen._alt_ids).index(other)
            table.move_cursor(row=idx)
            await pilot.press("enter")
            await pilot.pause()
            assert app.session.design.strategy == other
            await pilot.press("ctrl+d")
            await pilot.pause()
            assert app.session.design.strategy is None


async def test_self_check_runs_in_a_worker(make_app, ui) -> None:
    import pytest

    from pypto_tui.contract.selfcheck import torch_available

    if not torch_available():
        pytest.skip("needs CPU torch")
    app = make_app("kl_div_batchmean")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert screen.query_one("#work").display  # the progress row while the baseline runs
        await ui.settle(pilot, app)
        assert not screen.query_one("#work").display
        status = str(screen.query_one("#status").render())
        assert status.startswith("self-check:") and "agree" in status, status


def test_the_direction_row_only_where_operand_order_matters(kb) -> None:
    """Issue 25 (11): a conv showed an empty "direction" row whose placeholder said "for
    divergences". The row is there for an asymmetric op (KL) or when the reader left it unknown."""
    from dataclasses import replace

    from pypto_tui.contract import extract_contract
    from pypto_tui.screens.contract_screen import _has_direction

    tasks = TASKS
    conv = extract_contract(tasks.parent / "tasks_conv" / "conv2d_pointwise.py", kb)
    kl = extract_contract(tasks / "kl_div_batchmean.py", kb)
    assert not _has_direction(conv) and not _has_direction(extract_contract(tasks / "elu.py", kb))
    assert _has_direction(kl)
    assert _has_direction(replace(conv, asymmetric=None))  # unknown: the user may need to say


async def test_kl_div_form_has_a_direction_and_a_conv_none(make_app, ui) -> None:
    app = make_app("kl_div_batchmean")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        screen = app.screen
        assert isinstance(screen, ContractScreen)
        assert screen.query_one("#f-direction").value == "KL(targets || predictions)"
        app._task_chosen(str(ui.tasks.parent / "tasks_conv" / "conv2d_pointwise.py"))
        await ui.settle(pilot, app)
        assert app.screen.contract.family == "conv"
        assert not app.screen.query("#f-direction") and app.screen.query("#f-asymmetric")
