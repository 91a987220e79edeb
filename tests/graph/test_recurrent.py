"""nn.LSTM and nn.GRU through the traced front end (RNN.time-loop): `lstm.input` / `gru.input`, kept whole
by the tracer, become one node per layer reading the layer below's sequence, its four parameters and its
slice of h0 (and c0); h_n is each layer's last step, c_n a node of its own; each layer plans one
recurrent kernel.
From stored traces (tests/fixtures/traces), so no task code runs here."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest

from pypto_tui.contract.aten import graph_from_trace
from pypto_tui.ops import registry
from pypto_tui.ops.base import OpError
from pypto_tui.plan import decompose, fusion_rules, partition

FIX = Path(__file__).resolve().parents[1] / "fixtures"


def trace(name: str) -> dict:
    return json.loads((FIX / "traces" / f"{name}.json").read_text())


def test_a_two_layer_lstm_is_one_node_a_layer_fed_by_the_one_below() -> None:
    g = graph_from_trace(trace("lstm_classifier"))
    assert not g.problems
    layers = [n for n in g.nodes if n.op == "lstm"]
    assert [n.shape for n in layers] == [(4, 8, 64), (4, 8, 64)]
    assert layers[0].inputs[0] == "x" and layers[1].inputs[0] == layers[0].id
    assert [layers[k].inputs[1:5] for k in range(2)] == [
        tuple(f"lstm.{p}_l{k}" for p in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")) for k in range(2)]
    assert all(n.attrs == {"batch_first": True, "emit": "sequence", "reverse": False} for n in layers)
    groups = partition(decompose(g), fusion_rules(None)).groups
    recurrent = [grp for grp in groups if any(g.node(i) is not None and g.node(i).op == "lstm" for i in grp.nodes)]
    assert len(recurrent) == 2 and all(len(grp.nodes) == 1 for grp in recurrent)  # a layer is a kernel alone


def test_the_final_states_are_the_last_steps_and_the_cell_state_nodes() -> None:
    g = graph_from_trace(trace("lstm_states"))
    assert not g.problems
    emits = sorted(n.attrs["emit"] for n in g.nodes if n.op == "lstm")
    assert emits == ["cell", "cell", "sequence", "sequence"]  # c_n needs each layer's final cell state
    cells = [n for n in g.nodes if n.op == "lstm" and n.attrs["emit"] == "cell"]
    assert all(n.shape == (4, 32) for n in cells) and g.shape_of(g.output) == (4, 32)


@pytest.mark.parametrize(("index", "value", "why"), [
    (3, False, "without biases"), (6, True, "training mode"), (4, 3, "3 layer(s) reads 2 initial state(s)"),
])
def test_an_lstm_the_kernel_does_not_take_is_one_line_naming_it(index: int, value: object, why: str) -> None:
    data = copy.deepcopy(trace("lstm_classifier"))
    node = next(n for n in data["nodes"] if n["target"] == "aten.lstm.input")
    node["args"][index] = value
    if index == 6:
        node["args"][5] = 0.5  # dropout between layers, in training mode
    problems = graph_from_trace(data).problems
    assert len(problems) == 1 and why in problems[0] and "self.lstm" in problems[0] and "\n" not in problems[0]


def _torch_free_lstm(x, w_ih, w_hh, b_ih, b_hh, h, c):
    """The LSTM equations written out once more, step by step, for the reference to be checked against."""
    hidden = h.shape[1]
    out = []
    for t in range(x.shape[1]):
        z = x[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        sig = [1 / (1 + np.exp(-z[:, k * hidden:(k + 1) * hidden])) for k in (0, 1, 3)]
        c = sig[1] * c + sig[0] * np.tanh(z[:, 2 * hidden:3 * hidden])
        h = sig[2] * np.tanh(c)
        out.append(h)
    return np.stack(out, 1), c


def test_the_registry_reference_is_the_lstm_and_checks_its_shapes() -> None:
    kind = registry.kind("lstm")
    rng = np.random.default_rng(3)
    b, t, i, h = 3, 5, 6, 4
    args = [rng.standard_normal(s) for s in ((b, t, i), (4 * h, i), (4 * h, h), (4 * h,), (4 * h,), (b, h), (b, h))]
    seq, cell = _torch_free_lstm(*args)
    assert np.allclose(kind.reference(*args, batch_first=True), seq)
    assert np.allclose(kind.reference(*args, batch_first=True, emit="cell"), cell)
    time_major = [np.swapaxes(args[0], 0, 1), *args[1:]]
    assert np.allclose(kind.reference(*time_major), np.swapaxes(seq, 0, 1))
    shapes = [a.shape for a in args]
    assert kind.shape(shapes, {"batch_first": True}) == (b, t, h)
    assert kind.shape(shapes, {"batch_first": True, "emit": "cell"}) == (b, h)
    with pytest.raises(OpError, match="weight_hh"):
        kind.shape([*shapes[:2], (4 * h, h + 1), *shapes[3:]], {"batch_first": True})


def test_a_gru_is_one_node_a_layer_and_its_h_n_the_last_steps() -> None:
    g = graph_from_trace(trace("gru_hidden"))
    assert not g.problems
    layers = [n for n in g.nodes if n.op == "gru"]
    assert len(layers) == 2 and all(len(n.inputs) == 6 and n.attrs["batch_first"] is False for n in layers)
    assert g.shape_of(g.output) == (2, 4, 32)  # h_n: (layers, batch, hidden)
    kind = registry.kind("gru")
    rng = np.random.default_rng(5)
    b, t, i, h = 2, 4, 3, 5
    x, w_ih, w_hh, b_ih, b_hh, h0 = (rng.standard_normal(s) for s in
                                     ((t, b, i), (3 * h, i), (3 * h, h), (3 * h,), (3 * h,), (b, h)))
    hs = h0
    for step in range(t):  # torch's GRU equations, written out once more
        gi, gh = x[step] @ w_ih.T + b_ih, hs @ w_hh.T + b_hh
        r = 1 / (1 + np.exp(-(gi[:, :h] + gh[:, :h])))
        z = 1 / (1 + np.exp(-(gi[:, h:2 * h] + gh[:, h:2 * h])))
        n = np.tanh(gi[:, 2 * h:] + r * gh[:, 2 * h:])
        hs = (1 - z) * n + z * hs
    assert np.allclose(kind.reference(x, w_ih, w_hh, b_ih, b_hh, h0)[-1], hs)
    with pytest.raises(OpError, match="emits the sequence"):
        kind.shape([x.shape, w_ih.shape, w_hh.shape, b_ih.shape, b_hh.shape, h0.shape], {"emit": "cell"})


def test_a_bidirectional_layer_is_two_nodes_whose_sequences_feed_the_next_side_by_side() -> None:
    g = graph_from_trace(trace("gru_bidirectional"))
    assert not g.problems
    layers = [n for n in g.nodes if n.op == "gru"]
    assert [n.attrs["reverse"] for n in layers] == [False, True, False, True]
    joined = [n for n in g.nodes if n.op == "cat"]
    assert [n.inputs for n in joined] == [(layers[0].id, layers[1].id), (layers[2].id, layers[3].id)]
    assert layers[2].inputs[0] == joined[0].id and g.output == joined[1].id
    assert [n.inputs[1] for n in layers] == ["gru.weight_ih_l0", "gru.weight_ih_l0_reverse", "gru.weight_ih_l1",
                                             "gru.weight_ih_l1_reverse"]
    # the backward direction is the forward one over the reversed steps, its outputs back in place
    kind = registry.kind("gru")
    rng = np.random.default_rng(9)
    args = [rng.standard_normal(s) for s in ((2, 5, 3), (12, 3), (12, 4), (12,), (12,), (2, 4))]
    back = kind.reference(*args, batch_first=True, reverse=True)
    flipped = kind.reference(args[0][:, ::-1], *args[1:], batch_first=True)
    assert np.allclose(back, flipped[:, ::-1])


def test_a_recurrent_modules_verify_size_counts_its_layer_steps() -> None:
    """The module test shrinks a model by its largest tensor; an LSTM's cost is its steps (every step of
    every layer through every pass), so the layers' steps count too: 6 layers x 512 steps is far over the
    limit, where the (10, 512, 128) sequence alone was not."""
    from pypto_tui.sim import scaled
    from pypto_tui.sim.module_test import RECURRENT_STEP_ELEMENTS, _largest, _recurrent_work

    g = graph_from_trace(trace("lstm_classifier")).to_data()
    assert _recurrent_work(g) == 2 * 8 * RECURRENT_STEP_ELEMENTS  # two layers, batch-first (4, 8, 32)
    states = graph_from_trace(trace("gru_hidden")).to_data()
    assert _recurrent_work(states) == 2 * 6 * RECURRENT_STEP_ELEMENTS  # time-major (6, 4, 32)
    assert _recurrent_work({"nodes": [], "values": []}) == 0
    six_by_512 = 6 * 512 * RECURRENT_STEP_ELEMENTS
    assert six_by_512 > 20 * scaled.MAX_VERIFY_ELEMENTS > 10 * 512 * 128
    assert _largest(g) < _recurrent_work(g)


def test_the_last_step_picked_at_any_length_is_the_same_module() -> None:
    """The module test compares the graph at smaller sizes with the task's, sizes aside: `out[:, -1]` picks
    position 511 of 512 steps and 7 of 8, which is the same module; a fixed position is not."""
    from pypto_tui.sim.module_test import _structure

    def graph(steps: int, index: int) -> dict:
        return {"values": [{"id": "x", "kind": "input", "shape": [2, steps, 4]}],
                "nodes": [{"id": "n0", "op": "view", "inputs": ["x"], "shape": [2, 4],
                           "attrs": {"steps": [{"kind": "select", "dim": 1, "index": index}]}}], "output": "n0"}

    assert _structure(graph(512, 511)) == _structure(graph(8, 7))
    assert _structure(graph(512, 0)) == _structure(graph(8, 0))
    assert _structure(graph(512, 510)) != _structure(graph(8, 6))
