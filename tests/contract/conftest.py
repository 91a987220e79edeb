"""Shared fixtures for the contract and dimension-plan tests (no test reads ../shared)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pypto_tui.kb import get_kb

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TASKS = FIXTURES / "tasks"
EXTRA = FIXTURES / "tasks_extra"


@pytest.fixture(scope="session")
def kb():
    return get_kb()


@pytest.fixture(scope="session")
def contracts(kb):
    """Every task fixture's contract, extracted once per session."""
    from pypto_tui.contract.extract import extract_contract

    return {p.stem: extract_contract(p, kb) for p in sorted(TASKS.glob("*.py"))}
