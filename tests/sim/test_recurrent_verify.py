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


SIZED_LSTM = '''import torch
import torch.nn as nn

batch_size = 4
seq_len = 64
input_size = 16
hidden_size = 32


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, 1, batch_first=True)

    def forward(self, x, h0, c0):
        out, _ = self.lstm(x, (h0, c0))
        return out[:, -1, :]


def get_inputs():
    return [torch.randn(batch_size, seq_len, input_size), torch.randn(1, batch_size, hidden_size),
            torch.randn(1, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size]
'''


@pytest.mark.exhaustive
def test_the_time_steps_are_a_counted_axis_three_then_five(kb, tmp_path) -> None:
    """Two steps carry the state once: the module test runs three (a state never read back fails there),
    and the second trial five; the task's 64 shrink because `out[:, -1]` is the same module at any length."""
    from pypto_tui.design import module_stages
    from pypto_tui.sim.module_test import module_test

    task = tmp_path / "sized_lstm.py"
    task.write_text(SIZED_LSTM)
    p = Pipeline(kb, Design(task=str(task), front_end="traced"))
    test = module_test(p, module_stages(p))
    assert [(a.what, a.count) for a in test.counts] == [("kernel 0 (lstm): time steps", 3)], test.notes
    assert test.second is not None and [a.count for a in test.second.counts] == [5]
    report = finish_verify(prepared := prepare_verify(p), run_many([prepared.job], jobs=1, timeout_s=900,
                                                                     cache=False)[0])
    assert report.passed and report.design_kept, report.reason
