"""The operator registry: the one place an operator kind is described.

Each module here describes one kind of operator (views, elementwise maths, matmuls, convs,
pools, reductions, norms, softmax, scans, ...): how PyTorch spells it (module, functional and
method forms), its shape function, its numpy reference and its kernel role (elementwise, a view,
or an anchor that a pattern writes). The contract reader turns `forward` into an `OpGraph` by
looking spellings up here, so a new elementwise operator is one entry in `elementwise.py` and a
new anchor is one module here plus its pattern.

Pure: numpy and the standard library only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pypto_tui.ops.base import OpError, OpKind
    from pypto_tui.ops.registry import REGISTRY, by_module, by_spelling, kind

__all__ = ["REGISTRY", "OpError", "OpKind", "by_module", "by_spelling", "kind"]

_LAZY = {"OpError": "base", "OpKind": "base", "REGISTRY": "registry", "by_module": "registry",
         "by_spelling": "registry", "kind": "registry"}


def __getattr__(name: str) -> Any:
    """The registry is built on first use: a submodule that needs no operator (`ops.roles`, which the
    plan imports for the `tile` one-shot) must not load every operator kind with it."""
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value
    return value
