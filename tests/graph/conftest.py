"""The traced fixtures' stored traces (tests/fixtures/traces) in a cache of the test's own, under the key the
tracer computes, so a test reads a traced model without running its code or importing torch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pypto_tui.kb import bundled_pack_dir, get_kb
from pypto_tui.trace.tracer import _TraceCache, pack_id, torch_version, trace_key

FIX = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache holding the stored trace of every traced fixture (as the tracer would have left it)."""
    version = torch_version(sys.executable)
    if version is None:
        pytest.skip("torch is not installed: the trace cache key names its version")
    pack = pack_id(get_kb(bundled_pack_dir()))
    store = _TraceCache(tmp_path / "traces")
    for stored in sorted((FIX / "traces").glob("*.json")):
        task = next(f for d in ("tasks_traced", "tasks_chain") if (f := FIX / d / f"{stored.stem}.py").exists())
        store.put(trace_key(task.read_bytes(), version, pack), json.loads(stored.read_text()))
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path))
    return tmp_path
