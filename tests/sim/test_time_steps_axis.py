"""A recurrent layer's time steps are a counted axis of the module test (sim/module_test._time_steps): the
sequence's time axis, batch-first or time-major; no other kernel has one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pypto_tui.sim.module_test import _time_steps


def _stage(family: str, shape: tuple[int, ...] | None, **op_args: object) -> SimpleNamespace:
    contract = SimpleNamespace(family=family, operands=[SimpleNamespace(shape=shape)], op_args=op_args)
    return SimpleNamespace(pipeline=SimpleNamespace(contract=lambda: contract))


@pytest.mark.parametrize(("stage", "steps"), [
    (_stage("recurrent", (4, 7, 16), batch_first=True), 7),
    (_stage("recurrent", (7, 4, 16), batch_first=False), 7),
    (_stage("recurrent", (7, 4, 16)), 7),
    (_stage("matmul", (4, 7, 16)), None),
    (_stage("recurrent", None), None),
])
def test_the_time_axis_is_read_from_the_sequence(stage: SimpleNamespace, steps: int | None) -> None:
    assert _time_steps(stage) == steps
