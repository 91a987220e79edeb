"""CONV.flat-phases through the compiler: a strided 2-D conv reads its stride-phase planes flat and
verifies at every pass with its design kept; a phase stored at another phase's plane fails."""

from __future__ import annotations

from dataclasses import replace

import pytest
from family import module_task

from pypto_tui.design import Design, Pipeline, kernel_of
from pypto_tui.sim import jobs as J
from pypto_tui.sim.runner import run_one
from pypto_tui.sim.verification import prepare_verify, verify_many

pytestmark = pytest.mark.sim


def test_a_conv_strided_along_one_axis_verifies_on_phase_planes(kb, tmp_path):
    """Stride (1, 3) with dilation and uneven padding: one phase along H (a plain view), three along W."""
    task = module_task(tmp_path, "Conv2d(4, 6, (3, 4), stride=(1, 3), padding=(2, 1), dilation=(1, 2))",
                       (2, 4, 12, 50))
    p = Pipeline(kb, Design(task=task))
    src = kernel_of(p).source
    assert "rows = pypto.view(padded_chunk, [BASIC_BATCH, PH, QW], [0, 0, 0])" in src
    assert "part = pypto.index_select(rows, 2, keep_w[c2])" in src and "keep_h" not in src
    r = verify_many([p], jobs=1, cache=False)[0]
    assert r.passed and r.design_kept and not r.missing_passes, r.reason
    assert r.max_abs_err is not None and r.max_abs_err < 1e-4


def test_a_phase_stored_at_another_phases_plane_fails(kb, tmp_path):
    """Dilation 2 over stride 3 reads phases 0, 2, 1 of W: a phase kernel that stores each phase's
    columns at the next phase's plane fails. (The grouped fixture, dilation 2 over stride 2, reads
    phase 0 alone: a swap there changes nothing the conv reads.)"""
    task = module_task(tmp_path, "Conv2d(4, 6, (3, 4), stride=(1, 3), padding=(2, 1), dilation=(1, 2))",
                       (2, 4, 12, 50))
    prep = prepare_verify(Pipeline(kb, Design(task=task)))
    assert prep.job is not None
    src = prep.job.kernel_source
    old = "part = pypto.index_select(rows, 2, keep_w[c2])"
    assert src.count(old) == 2  # the main block and the tail block
    job = replace(prep.job, kernel_source=src.replace(old, old.replace("keep_w[c2]", "keep_w[(c2 + 1) % 3]")),
                  label="phase planes shifted")
    r = run_one(job, cache=False)
    assert r.status == J.MISMATCH and r.passed is False
