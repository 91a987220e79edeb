"""Softmax and log-softmax along one dim (module, functional and method forms). Their formulas name
the element {x} and the elements {x_r} along the softmax axis r."""

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
           modules=("Softmax",), params=("dim", "_stacklevel", "dtype"), defaults={"dim": None},
           pattern="softmax", formula="exp({x}) / sum_r exp({x_r})",
           aten=("aten._softmax.default", "aten.softmax.int"), module_signature=(("dim", None),)),
    OpKind("log_softmax", "softmax", same_shape, _log_softmax, functions=("log_softmax",),
           methods=("log_softmax",), modules=("LogSoftmax",), params=("dim", "_stacklevel", "dtype"),
           defaults={"dim": None}, pattern="softmax",
           formula="{x} - log(sum_r exp({x_r}))",
           aten=("aten._log_softmax.default", "aten.log_softmax.int"), module_signature=(("dim", None),)),
)
