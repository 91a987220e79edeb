"""Softmax and log-softmax along one dim (module, functional and method forms)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto_tui.ops.base import OpKind, axis, same_shape


def _lse(x: np.ndarray, dim: Any) -> np.ndarray:
    """log(sum(exp(x))) along `dim`, kept as size 1, shifted by the max so it cannot overflow."""
    a = axis(dim, x.ndim)
    m = x.max(axis=a, keepdims=True)
    return np.asarray(np.log(np.exp(x - m).sum(axis=a, keepdims=True)) + m)


def _softmax(x: np.ndarray, dim: Any = None, **_: Any) -> np.ndarray:
    return np.asarray(np.exp(x - _lse(x, dim)))


def _log_softmax(x: np.ndarray, dim: Any = None, **_: Any) -> np.ndarray:
    return np.asarray(x - _lse(x, dim))


KINDS = (
    OpKind("softmax", "softmax", same_shape, _softmax, functions=("softmax",), methods=("softmax",),
           modules=("Softmax",), params=("dim",), pattern="softmax",
           aten=("aten._softmax.default", "aten.softmax.int")),
    OpKind("log_softmax", "softmax", same_shape, _log_softmax, functions=("log_softmax",),
           methods=("log_softmax",), modules=("LogSoftmax",), params=("dim",), pattern="softmax",
           aten=("aten._log_softmax.default", "aten.log_softmax.int")),
)
