"""The suite tests: tiny task folders, a run history in a temp file, and the sim skip.

Tests marked `sim` run the real compiler (through the same `verify` command a user types); they
are skipped, with the install hint as the reason, when pypto 0.2.0 or torch is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pypto_tui.sim.availability import check_sim

sys.path.insert(0, str(Path(__file__).parent))  # `from suite_helpers import ...`
SMALL = Path(__file__).parent / "fixtures" / "suite_small"
"""Three tasks that verify in seconds each, and sort_fails.py, which fails on purpose (unsupported)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    avail = check_sim()
    if avail.ok:
        return
    skip = pytest.mark.skip(reason=avail.message)
    for item in items:
        if "sim" in item.keywords and "/tests/suite/" in item.path.as_posix():
            item.add_marker(skip)
