"""RNN.time-loop on the compiler: nn.LSTM and nn.GRU, read through the traced front end, as one kernel a
layer that loops over the time steps with its states on chip. A two-layer LSTM classifier over the last
step, a time-major LSTM stack whose h_n and c_n are the output, a GRU's h_n and a bidirectional GRU's
sequence verify every element and every pass row with every kernel run; a twin with one gate's role swapped fails."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import tiered

from pypto_tui.design import Design, Pipeline
from pypto_tui.sim.runner import run_many
from pypto_tui.sim.verification import finish_verify, prepare_verify

pytestmark = [pytest.mark.sim, pytest.mark.torch]

TRACED = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_traced"
TWINS = {  # the forget gate scaling the cell state by the input gate; the GRU's update gate the other way
    "lstm": ("cs.move(forget_gate * cs + in_gate * candidate)", "cs.move(in_gate * cs + in_gate * candidate)"),
    "gru": ("hs.move(candidate + update_gate * (hs - candidate))", "hs.move(hs + update_gate * (candidate - hs))"),
}
LAYERS = {"lstm_classifier.py": ("lstm", 2), "lstm_states.py": ("lstm", 4), "gru_hidden.py": ("gru", 2),
          "gru_bidirectional.py": ("gru", 4)}


@pytest.mark.parametrize("name", tiered(LAYERS, {"lstm_classifier.py"}))
def test_a_recurrent_layer_verifies_as_one_time_loop_and_a_wrong_gate_fails(kb, name: str) -> None:
    prepared = prepare_verify(Pipeline(kb, Design(task=str(TRACED / name), front_end="traced")))
    assert prepared.job is not None, prepared.report.reason
    assert prepared.report.design_kept, prepared.report.notes
    source = prepared.job.kernel_source
    kind, layers = LAYERS[name]
    assert source.count(f"def {kind}_kernel(") == layers == source.count('name="TIME_LOOP"')
    assert TWINS[kind][0] in source
    twin = replace(prepared.job, kernel_source=source.replace(*TWINS[kind]))
    clean, broken = run_many([prepared.job, twin], jobs=2, timeout_s=900, cache=False)
    ok, bad = finish_verify(prepared, clean), finish_verify(prepared, broken)
    assert ok.passed and not ok.missing_passes and ok.kernels_run == ok.kernels, ok.reason
    assert not bad.passed and "elements" in bad.reason, bad.reason
