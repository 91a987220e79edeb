"""Softmax and log-softmax along one dim (module, functional and method forms)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto_tui.ops.base import OpKind, axis, same_shape


def _softmax(x: np.ndarray, dim: Any = None, **_: Any) -> np.ndarray:
    a = axis(dim, x.ndim)
    m = x.max(axis=a, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=a, keepdims=True)


def _log_softmax(x: np.ndarray, dim: Any = None, **_: Any) -> np.ndarray:
    a = axis(dim, x.ndim)
    m = x.max(axis=a, keepdims=True)
    return x - (np.log(np.exp(x - m).sum(axis=a, keepdims=True)) + m)


KINDS = (
    OpKind("softmax", "softmax", same_shape, _softmax, functions=("softmax",), methods=("softmax",),
           modules=("Softmax",), params=("dim",), pattern="softmax",
           aten=("aten._softmax.default", "aten.softmax.int")),
    OpKind("log_softmax", "softmax", same_shape, _log_softmax, functions=("log_softmax",),
           methods=("log_softmax",), modules=("LogSoftmax",), params=("dim",), pattern="softmax",
           aten=("aten._log_softmax.default", "aten.log_softmax.int")),
)
