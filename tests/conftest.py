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
