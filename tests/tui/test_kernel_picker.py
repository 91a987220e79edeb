"""A whole model in the app: the Contract step shows its kernels grouped by submodule (a Tree), the
kernel picker (ctrl+k) filters them by operator or submodule path and shows each kernel's path, and
moving between kernels reuses what was computed (nothing on a highlight; a kernel shown before is
painted without a second round of work)."""

from __future__ import annotations

import time
from pathlib import Path

from textual.widgets import OptionList, Select, Tree

from pypto_tui.contract.submodule import kernel_matches
from pypto_tui.design import module_plan_of
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.base import StepScreen
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_picker import KernelPickerDialog
from pypto_tui.screens.tiles_screen import TilesScreen

BN = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_chain" / "linear_batchnorm1d.py"


def _app(state: Path, task: Path = BN) -> PyptoApp:
    app = PyptoApp(task=str(task), blink=False, state=state, trust_task_code=True)
    app.animation_level = "none"
    return app


def _deep(tmp_path: Path, layers: int) -> Path:
    """`layers` projections (self.layer0 ...), a ReLU after every other one: one submodule per projection."""
    init = "\n".join(f"        self.layer{i} = nn.Linear(64, 64, bias=False)" for i in range(layers))
    calls = "\n".join(f"        x = torch.relu(self.layer{i}(x))" if i % 2 else f"        x = self.layer{i}(x)"
                      for i in range(layers))
    task = tmp_path / f"deep{layers}.py"
    task.write_text(f"import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
                    f"        super().__init__()\n{init}\n\n    def forward(self, x):\n{calls}\n        return x\n\n\n"
                    "def get_inputs():\n    return [torch.randn(32, 64)]\n\n\ndef get_init_inputs():\n    return []\n")
    return task


async def _on_tiles(ui, pilot, app: PyptoApp) -> TilesScreen:
    """The app drawn, then moved on to the Tiles step of the chain's first kernel."""
    await ui.settle(pilot, app)
    await ui.forward(pilot, app, 2)
    tiles = app.screen
    assert isinstance(tiles, TilesScreen)
    return tiles


def _rows(dialog: KernelPickerDialog) -> list[str]:
    options = dialog.query_one("#kernel-list", OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


async def test_the_contract_step_groups_the_kernels_by_submodule_with_their_operators(ui, state) -> None:
    app = _app(state)
    async with app.run_test(size=(160, 48)) as pilot:
        await ui.settle(pilot, app)
        contract = app.screen
        assert isinstance(contract, ContractScreen)
        tree = contract.query_one("#chain-view", Tree)
        assert contract.focused is tree  # the form's place: arrows walk it at once
        stages = app.session.kernels()
        graph, plan = module_plan_of(app.session.pipeline) or (None, None)
        assert graph is not None and plan is not None
        groups = tree.root.children
        assert [str(g.label).split()[0] for g in groups] == ["proj", "bn"]
        assert all(g.is_expanded for g in groups)  # two groups: nothing to fold away
        shown = {k.data: k for g in groups for k in g.children}
        assert sorted(shown) == [s.index for s in stages]
        for s, group in zip(stages, plan.groups, strict=True):
            assert str(groups[0 if s.submodule == "proj" else 1].label).endswith(
                f"{sum(t.submodule == s.submodule for t in stages)} kernels")
            operators = [str(leaf.label).split()[0] for leaf in shown[s.index].children]
            assert operators == list(group.nodes), s.index  # the kernel's own operators, in order
        tree.move_cursor(shown[3])
        await pilot.press("enter")
        await ui.settle(pilot, app)
        assert app.session.design.kernel == 3 and "kernel 3 picked" in str(contract.query_one("#status").render())
        await pilot.press("ctrl+n")
        await ui.settle(pilot, app)
        assert isinstance(app.screen, DimsScreen) and app.screen.query_one("#kernel-picker", Select).value == 3


async def test_a_model_of_many_submodules_opens_on_its_groups_folded(ui, state, tmp_path) -> None:
    app = _app(state, _deep(tmp_path, 12))
    async with app.run_test(size=(160, 48)) as pilot:
        await ui.settle(pilot, app)
        tree = app.screen.query_one("#chain-view", Tree)
        groups = [n for n in tree.root.children if n.data is None]
        kernels = [n for n in tree.root.children if n.data is not None]  # the ReLUs of Model.forward
        assert [str(g.label).split()[0] for g in groups] == [f"layer{i}" for i in range(12)]
        assert len(kernels) == 6 and all(str(k.label).split(":")[1].strip().startswith("relu") for k in kernels)
        assert tree.root.is_expanded and not any(g.is_expanded for g in groups)
        assert [n.data for n in tree.root.children][:3] == [None, None, 2]  # forward's order: layer0, layer1, relu
        tree.move_cursor(groups[0])
        await pilot.press("space")  # a group opens on its kernel
        await pilot.pause()
        assert groups[0].is_expanded and groups[0].children[0].data == 0


async def test_the_picker_filters_by_operator_or_submodule_and_shows_each_path(ui, state) -> None:
    app = _app(state)
    async with app.run_test(size=(160, 48)) as pilot:
        tiles = await _on_tiles(ui, pilot, app)
        stages = app.session.kernels()
        await pilot.press("ctrl+k")
        dialog = app.screen
        assert isinstance(dialog, KernelPickerDialog)
        rows = _rows(dialog)
        assert len(rows) == len(stages) and all(s.submodule in row for s, row in zip(stages, rows, strict=True))
        for typed in ("bn", "bn,", "mean"):
            await ui.type_into(pilot, app, "#kernel-filter", typed)
            want = [s.index for s in stages if kernel_matches(typed, s.ops, s.submodule)]
            assert [r.index for r in dialog.shown] == want, typed
            assert len(_rows(dialog)) == len(want)
        assert [r.index for r in dialog.shown] == [2, 5]
        assert "2 of 7 kernels match 'mean'" in str(dialog.query_one("#kernel-pick-count").render())
        await pilot.press("down")  # the filter keeps the focus; the highlight moves in the list
        assert dialog.highlighted() is not None and dialog.highlighted().index == 5
        assert "kernel 5: mean (reduction) in bn" in str(dialog.query_one("#kernel-pick-detail").render())
        await pilot.press("escape")  # keeps the kernel shown
        await ui.settle(pilot, app)
        assert app.screen is tiles and app.session.design.kernel == 0
        await pilot.press("ctrl+k")
        await ui.type_into(pilot, app, "#kernel-filter", "proj")
        await pilot.press("down", "enter")
        await ui.settle(pilot, app)
        assert app.screen is tiles and app.session.design.kernel == 1
        assert app.session.step_pipeline is stages[1].pipeline
        assert tiles.query_one("#kernel-picker", Select).value == 1


async def test_moving_between_kernels_reuses_what_was_computed(ui, state, monkeypatch) -> None:
    app = _app(state)
    async with app.run_test(size=(160, 48)) as pilot:
        tiles = await _on_tiles(ui, pilot, app)
        for k in (1, 2, 0):  # each kernel shown once
            tiles.query_one("#kernel-picker", Select).value = k
            await ui.settle(pilot, app)
        calls: list[str] = []
        kernels = app.session.kernels
        monkeypatch.setattr(app.session, "kernels", lambda: calls.append("kernels") or kernels())
        await pilot.press("ctrl+k")
        dialog = app.screen
        assert isinstance(dialog, KernelPickerDialog)
        before = len(calls)
        started = time.perf_counter()
        for _ in range(6):
            dialog.action_move(1)
        per_move = (time.perf_counter() - started) / 6
        assert dialog.highlighted() is not None and dialog.highlighted().index == 6
        assert len(calls) == before  # a highlight reads the rows the dialog was given, nothing else
        workers: list[object] = []
        original = StepScreen._prepare_worker
        monkeypatch.setattr(StepScreen, "_prepare_worker", lambda self, sig: workers.append(sig) or original(self, sig))
        for _ in range(4):
            dialog.action_move(-1)
        await pilot.press("enter")  # kernel 2, shown before
        await ui.settle(pilot, app)
        assert app.session.design.kernel == 2 and app.screen is tiles and not workers  # painted from the caches
        assert "reduce dim 0" in str(tiles.query_one("#tile-shape").render())
        print(f"highlight move: {per_move * 1e3:.2f} ms")


async def test_the_tile_fields_follow_the_kernel_without_being_rebuilt(ui, state) -> None:
    app = _app(state)
    async with app.run_test(size=(160, 48)) as pilot:
        tiles = await _on_tiles(ui, pilot, app)
        stages = app.session.kernels()
        first = tiles.tile_fields()[0]
        for k in (2, 4, 5, 4, 3):  # kernel 4 is one axis (16384,), the others two
            tiles.query_one("#kernel-picker", Select).value = k
            await ui.settle(pilot, app)
            await pilot.pause()
            pipe = stages[k].pipeline
            shape, chosen = pipe.needs().tiles[0].shape, pipe.chosen_tile()
            columns = list(tiles.query_one("#tile-fields").children)
            assert len(columns) == len(shape) == len(tiles.tile_fields()), k
            labels = [str(c.query_one(".axis-label").render()) for c in columns]
            assert [lbl.split("/")[-1] for lbl in labels] == [str(n) for n in shape], (k, labels)
            assert [f.value for f in tiles.tile_fields()] == [str(t) for t in chosen], k
            assert tiles.tile_fields()[0] is first  # the first axis's field stays, and the focus with it
            assert tiles.focused is first
        assert "tile OK" in str(tiles.query_one("#status").render())


async def test_the_picker_stays_inside_a_small_screen(ui, state, tmp_path) -> None:
    app = _app(state, _deep(tmp_path, 12))
    async with app.run_test(size=(80, 24)) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 1)
        await pilot.press("ctrl+k")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, KernelPickerDialog) and len(dialog.shown) == 18
        box = dialog.query_one("#kernel-pick").region
        assert dialog.region.contains_region(box), (box, dialog.region)
        for _ in range(2):
            await pilot.press("pagedown")
        await pilot.pause()
        options = dialog.query_one("#kernel-list", OptionList)
        assert options.highlighted == 17
        assert options.scroll_offset.y > 0  # the list scrolls inside the dialog to the highlight
