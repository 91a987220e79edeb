"""Helpers for driving the app with Pilot: a deterministic app, waiting for workers, typing."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from pypto_tui.screens.app import PyptoApp

TASKS = Path(__file__).resolve().parents[1] / "fixtures" / "tasks"
SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _no_animation(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEXTUAL_ANIMATIONS", "none")


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """The autosave folder of this test (also exported as PYPTO_TUI_STATE_DIR by the root conftest)."""
    folder = tmp_path / "state"
    folder.mkdir()
    return folder


@pytest.fixture
def make_app(state: Path) -> Callable[..., PyptoApp]:
    def make(task: str | None = None, **kw: object) -> PyptoApp:
        path = str(TASKS / f"{task}.py") if task else None
        kw.setdefault("blink", False)
        kw.setdefault("state", state)
        kw.setdefault("trust_task_code", True)  # the consent question has its own tests
        app = PyptoApp(task=path, **kw)  # type: ignore[arg-type]
        app.animation_level = "none"
        return app

    return make


async def settle(pilot: object, app: PyptoApp) -> None:
    """Let workers finish and the screen catch up (no sleeps)."""
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]
    await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]
    for _ in range(200):  # a form swap mounts its rows over several frames on a slow machine
        if not getattr(app.screen, "form_pending", False):
            break
        await pilot.pause()  # type: ignore[attr-defined]


async def type_into(pilot: object, app: PyptoApp, selector: str, text: str) -> None:
    """Focus a field, clear it and type `text` key by key (each key is one Input.Changed)."""
    widget = app.screen.query_one(selector)
    widget.focus()
    await pilot.pause()  # type: ignore[attr-defined]
    widget.value = ""  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]
    for ch in text:
        await pilot.press(ch)  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]


async def forward(pilot: object, app: PyptoApp, steps: int) -> None:
    """Go `steps` steps on (ctrl+n), settling after each."""
    for _ in range(steps):
        await pilot.press("ctrl+n")  # type: ignore[attr-defined]
        await settle(pilot, app)


def task_path(name: str) -> str:
    return str(TASKS / f"{name}.py")


@pytest.fixture
def ui() -> SimpleNamespace:
    """The helpers above, for test modules (importlib mode keeps conftest out of sys.path)."""
    return SimpleNamespace(settle=settle, type_into=type_into, forward=forward, task=task_path, size=SIZE, tasks=TASKS)
