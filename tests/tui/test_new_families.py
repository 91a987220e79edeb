"""The families of issue 11 in the app: each walks contract -> dims -> tiles -> loops -> kernel by
keys, and the kernel step shows the module the CLI writes for the same task."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pypto_tui.design import kernel_of
from pypto_tui.screens.app import PyptoApp
from pypto_tui.screens.contract_screen import ContractScreen
from pypto_tui.screens.dims_screen import DimsScreen
from pypto_tui.screens.kernel_screen import KernelScreen
from pypto_tui.screens.loops_screen import LoopsScreen
from pypto_tui.screens.tiles_screen import TilesScreen

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"
ONE_PER_FAMILY = {  # fixture -> the pattern that writes it
    "cumsum_exclusive_dim0": "scan", "argmin_last_odd": "argreduce", "cross_entropy_7_classes": "cross_entropy",
    "gelu_exact_3d": "A", "huber_delta_module": "D", "hinge_broadcast_3d": "D", "l1_normalize_3d": "C",
    "triu_matmul_odd_diag": "tri_matmul", "diag_matmul_rows_odd": "diag", "einsum_4d_transposed": "B",
    "matvec_long_k": "matvec", "sdpa_odd_len": "attention",
}


@pytest.mark.parametrize("task", sorted(ONE_PER_FAMILY))
async def test_new_family_walks_to_its_kernel(task, ui, state) -> None:
    app = PyptoApp(task=str(EXTRA / f"{task}.py"), blink=False, state=state)
    app.animation_level = "none"
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        assert isinstance(app.screen, ContractScreen) and app.screen.contract is not None
        assert app.screen.contract.supported and not app.screen.contract.unknown, app.screen.contract.reason
        for expect in (DimsScreen, TilesScreen, LoopsScreen, KernelScreen):
            await pilot.press("ctrl+n")
            await ui.settle(pilot, app)
            assert isinstance(app.screen, expect), (task, type(app.screen).__name__,
                                                    str(app.screen.query_one("#status").render()))
        source = app.screen.source
        assert source and "class ModelNew" in source
        ast.parse(source)
        assert app.session.pipeline.pattern().id == ONE_PER_FAMILY[task]
        assert kernel_of(app.session.pipeline).source == source
