"""A where's mask and scratch in the unified buffer (tiles.held_bytes, select_mask). pypto 0.2.0
refuses the tile the budget alone allowed, with its own count of the bytes; the stepped-down tile
builds and verifies at every pass."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = pytest.mark.sim

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra" / "narrow_gelu.py"


def test_the_stepped_down_tile_verifies_where_the_budget_only_tile_is_refused(kb) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TASK))), scale="full")
    assert prepared.job is not None, prepared.report.reason
    source = prepared.job.kernel_source
    assert "TILE_SHAPE = (1024, 8)" in source, source
    wide = source.replace("TILE_SHAPE = (1024, 8)", "TILE_SHAPE = (2048, 8)")
    stepped, budget_only = run_many([prepared.job, replace(prepared.job, kernel_source=wide)], jobs=2,
                                    timeout_s=600, cache=False)
    ok, refused = finish_verify(prepared, stepped), finish_verify(prepared, budget_only)
    assert ok.passed and not ok.missing_passes, ok.reason
    assert not refused.passed and "WHERE_TT" in refused.reason and "[209056]" in refused.reason, refused.reason


POOL = TASK.parent / "maxpool2d_3x3_same.py"


def test_a_max_pools_window_tile_builds_where_the_budget_only_tile_fails_a_pass(kb) -> None:
    """The max pool's tap loop holds three tiles beside the select's mask: the stepped-down window tile
    builds at the task's full shape; the 16384-element tile the budget alone allows fails a pass."""
    from pypto_tui.sim.design_runs import cost_job

    job = cost_job(Pipeline(kb, Design(task=str(POOL))), "pool")
    assert not re.search(r"^TILE = \(1, 128, 128\)", job.kernel_source, re.M)
    wide = re.sub(r"^TILE = \([\d, ]+\)", "TILE = (1, 128, 128)", job.kernel_source, flags=re.M)
    built, failed = run_many([job, replace(job, kernel_source=wide)], jobs=2, timeout_s=600, cache=False)
    assert built.status == "ok" and built.e2e_us, (built.status, built.error)
    assert failed.status != "ok" and "Run pass failed" in (failed.error or ""), (failed.status, failed.error)
