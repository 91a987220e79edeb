"""Recurrent layers: one layer of an LSTM or a GRU run over every time step of a sequence.

`nn.LSTM` and `nn.GRU` run as the ATen operators `lstm.input` and `gru.input`, which the tracer keeps
whole (decomposed, each is a graph of thousands of nodes, one group per time step). The traced front end
(contract/aten.py) makes one node per layer, each reading the layer's input sequence, its four parameters
and its initial states (h0, and c0 for an LSTM); its kernel loops over the time steps with the states kept
on chip (RNN.time-loop).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pypto_tui.ops.base import OpError, OpKind, Shape

LSTM_INPUTS = ("input", "weight_ih", "weight_hh", "bias_ih", "bias_hh", "h0", "c0")
GRU_INPUTS = LSTM_INPUTS[:-1]
GATES = {"lstm": 4, "gru": 3}
"""How many gates a layer's weights stack along their first axis (LSTM: i, f, g, o; GRU: r, z, n)."""
EMITS = ("sequence", "cell")
"""What an lstm node gives: every time step's hidden state, (B, T, H) or (T, B, H), or the cell state after
the last step, (B, H) (`c_n`; h_n is the sequence's last step)."""


def _layer_shape(kind: str, shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    names = LSTM_INPUTS if kind == "lstm" else GRU_INPUTS
    if len(shapes) != len(names):
        raise OpError(f"a {kind.upper()} layer reads {len(names)} tensors ({', '.join(names)}), not {len(shapes)}")
    x, w_ih, w_hh, b_ih, b_hh, *states = (tuple(s) for s in shapes)
    if len(x) != 3:
        raise OpError(f"a {kind.upper()} layer reads a (batch, time, features) sequence, not {x}")
    gates = GATES[kind]
    hidden = w_hh[0] // gates if len(w_hh) == 2 else -1
    batch, steps = (x[0], x[1]) if attrs.get("batch_first") else (x[1], x[0])
    want = {"weight_ih": (gates * hidden, x[2]), "weight_hh": (gates * hidden, hidden), "bias_ih": (gates * hidden,),
            "bias_hh": (gates * hidden,), "h0": (batch, hidden), "c0": (batch, hidden)}
    for name, got in zip(names[1:], (w_ih, w_hh, b_ih, b_hh, *states), strict=True):
        if got != want[name]:
            raise OpError(f"the {kind.upper()} layer's {name} is {got}, not {want[name]} for input {x} and hidden size "
                          f"{hidden}")
    emit = attrs.get("emit", "sequence")
    if emit not in EMITS or (kind == "gru" and emit == "cell"):
        raise OpError(f"a {kind.upper()} layer emits {'the sequence' if kind == 'gru' else EMITS}, not {emit!r}")
    if emit == "cell":
        return (batch, hidden)
    return (batch, steps, hidden) if attrs.get("batch_first") else (steps, batch, hidden)


def _lstm_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return _layer_shape("lstm", shapes, attrs)


def _gru_shape(shapes: Sequence[Shape], attrs: Mapping[str, Any]) -> Shape:
    return _layer_shape("gru", shapes, attrs)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    out: np.ndarray = 1.0 / (1.0 + np.exp(-x))
    return out


def _lstm(x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray, h0: np.ndarray,
          c0: np.ndarray, batch_first: bool = False, emit: str = "sequence", reverse: bool = False,
          **_: Any) -> np.ndarray:
    """torch's LSTM layer: gates i, f, g, o in that order along the 4H axis of the weights; `reverse`, the
    backward direction of a bidirectional layer (the steps from the last, each output at its own step)."""
    seq = x if batch_first else np.swapaxes(x, 0, 1)  # (B, T, I)
    seq = seq[:, ::-1] if reverse else seq
    hidden = w_hh.shape[1]
    h, c = h0, c0
    outs = []
    for t in range(seq.shape[1]):
        gates = seq[:, t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh
        i, f, g, o = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
        h = _sigmoid(o) * np.tanh(c)
        outs.append(h)
    if emit == "cell":
        return np.ascontiguousarray(c)
    stacked = np.stack(outs[::-1] if reverse else outs, axis=1)  # (B, T, H)
    return np.ascontiguousarray(stacked if batch_first else np.swapaxes(stacked, 0, 1))


def _gru(x: np.ndarray, w_ih: np.ndarray, w_hh: np.ndarray, b_ih: np.ndarray, b_hh: np.ndarray, h0: np.ndarray,
         batch_first: bool = False, reverse: bool = False, **_: Any) -> np.ndarray:
    """torch's GRU layer: gates r, z, n in that order; n's hidden product is scaled by r after its bias;
    `reverse` as for the LSTM."""
    seq = x if batch_first else np.swapaxes(x, 0, 1)  # (B, T, I)
    seq = seq[:, ::-1] if reverse else seq
    hidden = w_hh.shape[1]
    h = h0
    outs = []
    for t in range(seq.shape[1]):
        gi = seq[:, t] @ w_ih.T + b_ih
        gh = h @ w_hh.T + b_hh
        r = _sigmoid(gi[:, :hidden] + gh[:, :hidden])
        z = _sigmoid(gi[:, hidden:2 * hidden] + gh[:, hidden:2 * hidden])
        n = np.tanh(gi[:, 2 * hidden:] + r * gh[:, 2 * hidden:])
        h = (1.0 - z) * n + z * h
        outs.append(h)
    stacked = np.stack(outs[::-1] if reverse else outs, axis=1)
    return np.ascontiguousarray(stacked if batch_first else np.swapaxes(stacked, 0, 1))


_OPTIONS = {"batch_first": False, "emit": "sequence", "reverse": False}
"""A layer node's attributes: the sequence's layout, what it gives (EMITS), and whether it is the backward
direction of a bidirectional layer."""

_FEATURES = ((0, -1), (1, 1))
"""The sequence's features and weight_ih's columns: the input projection holds them whole in one cube K tile.
A test at fewer features leaves that tile mostly empty and is wrong (KernelBench level-3 38: layers 1-5, 512
features, CUBE_K 512, tested at 32 features: 43% of elements off, max abs err 1.98; the same kernel verifies at
512 features and 32 steps)."""

KINDS = (
    OpKind("lstm", "recurrent", _lstm_shape, _lstm, params=tuple(_OPTIONS), inputs=LSTM_INPUTS, arity=7,
           spelled=("torch", "keywords"),
           pattern="recurrent", aten=("aten.lstm.input",), defaults=_OPTIONS, size_ties=(((2, 0), (2, 1), 4),),
           whole_axes=_FEATURES,
           note="one LSTM layer over every time step (i, f, g, o gates); a kernel loops over the steps"),
    OpKind("gru", "recurrent", _gru_shape, _gru, params=tuple(_OPTIONS), inputs=GRU_INPUTS, arity=6,
           spelled=("torch", "keywords"),
           pattern="recurrent", aten=("aten.gru.input",), defaults=_OPTIONS, size_ties=(((2, 0), (2, 1), 3),),
           whole_axes=_FEATURES,
           note="one GRU layer over every time step (r, z, n gates); a kernel loops over the steps"),
)
