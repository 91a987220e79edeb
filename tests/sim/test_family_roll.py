"""torch.roll (a shifted window's cyclic shift): read by both front ends as one registry kind that
decomposes, per rolled axis, into the two blocks that trade places (two narrow copies and their
concatenation); the module verifies through the real compiler, and a twin that shifts the wrong way fails."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pypto_tui.design import Design, Pipeline, task_kernels
from pypto_tui.ops import registry
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced" / "cyclic_shift.py"


def test_the_registry_rolls_as_torch_does():
    k = registry.kind("roll")
    assert k is not None and registry.by_aten("aten.roll.default") is k
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert np.array_equal(k.reference(x, shifts=(-1, 2), dims=(1, 2)), np.roll(x, (-1, 2), (1, 2)))


@pytest.mark.parametrize("front_end", ["static", "traced"])
def test_each_rolled_axis_is_two_narrow_copies_and_a_cat(cache, kb, front_end):
    found = task_kernels(Pipeline(kb, Design(task=str(TASK), front_end=front_end)))
    assert found.supported, found.reason
    assert [k.ops for k in found.kernels] == ["narrow", "narrow", "cat"] * 2 + ["mul"]
    first = found.kernels[0].pipeline.contract()
    assert first.op_args["start"] == 3 and first.op_args["length"] == 13  # shift -3 of 16: positions 3.. lead


@pytest.mark.sim
def test_a_cyclic_shift_verifies_and_a_twin_shifting_the_other_way_fails(kb, broken_twins):
    p = Pipeline(kb, Design(task=str(TASK)))
    (r,) = verify_many([p], jobs=1, cache=False)
    assert r.supported and r.passed and r.max_abs_err == 0, r.reason
    assert r.kernels == 7 and r.kernels_run == 7 and r.pass_rows == 6 * 7
    (bad,) = broken_twins([(Pipeline(kb, Design(task=str(TASK))), "pypto.assemble(n0r0t_all, [0, 0], out)",
                            "pypto.assemble(n0r0t_all, [0, w1], out)")])
    assert bad.status != J.OK and bad.passed is False, (bad.label, bad.status, bad.error)
