"""A kernel's own test shapes keep what its operator ties together: an LSTM layer's weights stack 4 gates
of the hidden size, so the gate rows shrink with the hidden size (a test that shrank them apart built no
valid layer), and a slice taken at a fixed offset (a traced `out[:, -1, :]`, a narrow at T - 1) keeps
the axis it starts into. Read from a stored trace: no task code runs, no compiler."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from pypto_tui.design import Design, Pipeline, module_stages
from pypto_tui.sim import scaled
from pypto_tui.sim import verify_shapes as VS

TASK = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced" / "lstm_classifier.py"


def test_a_fixed_axis_keeps_its_size_without_holding_an_equal_one() -> None:
    """A layer whose time steps equal its features (512 and 512): the features stay, the steps shrink."""
    shapes = {"seq": (10, 512, 512), "w_ih": (1024, 512)}
    out = scaled.reduce_shapes(shapes, keep_values=set(), budget=600_000, fixed={("seq", 2), ("w_ih", 1)})
    assert out["seq"][2] == out["w_ih"][1] == 512 and out["seq"][1] < 512
    held = scaled.reduce_shapes(shapes, keep_values=set(), budget=600_000, keep_positions={("seq", 2)})
    assert held["seq"][1] == 512  # kept by value class, the equal time axis could not move


def test_tied_sizes_shrink_together_and_the_rest_apart() -> None:
    shapes = {"w_hh": (1024, 256), "h0": (10, 256), "x": (10, 512, 128)}
    out = scaled.reduce_shapes(shapes, keep_values=set(), budget=4096, ties=[(("w_hh", 0), ("w_hh", 1), 4)])
    assert out["w_hh"][0] == 4 * out["w_hh"][1] and out["w_hh"][1] == out["h0"][1] < 256
    assert scaled.largest_input(out) <= 4096
    untied = scaled.reduce_shapes(shapes, keep_values=set(), budget=4096)
    assert untied["w_hh"][0] != 4 * untied["w_hh"][1]  # without the tie the two sizes move apart


def test_each_kernel_of_a_traced_lstm_shrinks_to_shapes_its_contract_accepts(cache, kb) -> None:
    stages = module_stages(Pipeline(kb, Design(task=str(TASK), front_end="traced")))
    assert stages is not None and not stages.refused, stages and stages.refused
    seen = set()
    for s in stages.stages:
        small = VS.reduced_shapes(s.pipeline, budget=256)
        c = VS.with_shapes(s.pipeline, small).contract()
        assert c.supported and not c.unknown, (s.ops, small, c.reason)
        if s.ops == "lstm":
            rows, hidden = small[c.operands[2].name]
            assert rows == 4 * hidden and hidden < 64, small
            x, w_ih = c.operands[0], c.operands[1]  # the features the input projection's cube K tile holds whole
            assert x.shape[-1] == w_ih.shape[1] == VS.full_shapes(s.pipeline)[x.name][-1], small
            seen.add("lstm")
        if s.ops == "narrow" and c.op_args["start"] > 0:  # the second layer's states, the last of 8 steps
            x, dim = c.operands[0], c.op_args["dim"]
            assert x.shape[dim] == VS.full_shapes(s.pipeline)[x.name][dim], small
            seen.add(f"narrow at {c.op_args['start']}")
    assert {"lstm", "narrow at 7"} <= seen, seen


@pytest.mark.parametrize("start", [0, 7])
def test_a_slice_keeps_the_axis_it_cuts(start: int) -> None:
    """The start and the length are constants of the design: a shorter axis could put the part outside it
    (the parts of a split at 64 and 128 of 192), or make the part the whole axis, where no offset bug shows."""
    x = SimpleNamespace(name="seq", shape=(4, 8, 64))
    contract = SimpleNamespace(op="narrow", operands=[x], op_args={"dim": -2, "start": start, "length": 1})
    assert VS._offset_axes(SimpleNamespace(contract=lambda: contract)) == {("seq", 1)}
    cast = SimpleNamespace(op="relu", operands=[x], op_args={})
    assert VS._offset_axes(SimpleNamespace(contract=lambda: cast)) == set()
