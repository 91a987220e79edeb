"""Scans along one dim: cumsum and cumprod (their exclusive, reverse and masked forms are
compositions the contract reader names; the registry knows the plain scans)."""

from __future__ import annotations

from typing import Any

import numpy as np

from pypto_tui.ops.base import OpKind, axis, same_shape


def _scan(fn: Any) -> Any:
    def run(x: np.ndarray, dim: Any = None, **_: Any) -> np.ndarray:
        return np.asarray(fn(x, axis=axis(dim, x.ndim)))
    return run


KINDS = (
    OpKind("cumsum", "scan", same_shape, formula="sum_{{{rng}}} {src}",
           reference=_scan(np.cumsum), functions=("cumsum",), methods=("cumsum",),
           params=("dim",), pattern="scan"),
    OpKind("cumprod", "scan", same_shape, formula="prod_{{{rng}}} {src}",
           reference=_scan(np.cumprod), functions=("cumprod",), methods=("cumprod",),
           params=("dim",), pattern="scan"),
    # the contract reads these (torch.cummax / cummin return values and indices; the graph reader does not
    # spell them yet)
    OpKind("cummax", "scan", same_shape, formula="max_{{{rng}}} {src}",
           reference=_scan(np.maximum.accumulate), params=("dim",), pattern="scan"),
    OpKind("cummin", "scan", same_shape, formula="min_{{{rng}}} {src}",
           reference=_scan(np.minimum.accumulate), params=("dim",), pattern="scan"),
    OpKind("logcumsumexp", "scan", same_shape, formula="logsumexp_{{{rng}}} {src}",
           reference=_scan(np.logaddexp.accumulate), params=("dim",), pattern="scan"),
)
