"""The Kernel panel speaks of the module on screen (issue 25, 11): the "exported to" line of one
task's module does not stay on the next task's."""

from __future__ import annotations

from pathlib import Path

from pypto_tui.screens.kernel_screen import KernelScreen


def _summary(app) -> str:
    return str(app.screen.query_one("#kernel-summary").render())


async def test_exported_to_belongs_to_the_task_it_was_exported_from(make_app, ui, tmp_path: Path) -> None:
    app = make_app("softmax_rows")
    async with app.run_test(size=ui.size) as pilot:
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 4)
        kernel = app.screen
        assert isinstance(kernel, KernelScreen) and kernel.source
        out = tmp_path / "softmax_kernel.py"
        kernel._export_to(str(out))
        await ui.settle(pilot, app)
        assert out.read_text(encoding="utf-8") == kernel.source
        assert f"exported to {out}" in _summary(app)
        app._task_chosen(ui.task("elu"))  # what the Open dialog does with a chosen path
        await ui.settle(pilot, app)
        await ui.forward(pilot, app, 4)
        assert app.screen is kernel and "elu" in (kernel.source or "").lower()
        assert "exported to" not in _summary(app)
        assert kernel.exported is None
