"""Shared fixtures: the default pack, the minimal test pack, and the fixture folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.kb import KnowledgeBase, bundled_pack_dir, load_pack

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return load_pack(bundled_pack_dir())


@pytest.fixture(scope="session")
def kb_minimal() -> KnowledgeBase:
    return load_pack(FIXTURES / "kb_minimal")


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every test away from the user's real state, cache and pack settings."""
    monkeypatch.delenv("PYPTO_TUI_KB", raising=False)
    monkeypatch.setenv("PYPTO_TUI_STATE_DIR", str(tmp_path_factory.mktemp("state")))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (`-n 2 --dist loadgroup`), keep every compiler-backed test on one worker: they
    already run two compiler processes at a time, while the other worker takes the rest."""
    for item in items:
        if item.get_closest_marker("sim") is not None:
            item.add_marker(pytest.mark.xdist_group("compiler"))
