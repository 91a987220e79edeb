"""The code generator's side of the registry's elementwise renders.

Each elementwise kind says how the kernel computes it (`OpKind.render`, in `pypto_tui/ops`) with the
operations handed to it; this module hands it the ones that build `Ex` syntax trees (so the P5 rules
of `codegen/expr.py` apply to every rendered op) and reads the rest of the entry: which parameters
become kernel scalars, torch's defaults for them, and why a kind without a render cannot be written.
No operator is named here: a new elementwise op is one registry entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.codegen.builder import PYPTO_DTYPES, attr
from pypto_tui.codegen.expr import Ex, call
from pypto_tui.ops import registry
from pypto_tui.ops.base import OpKind


class _Ops:
    """`KernelOps` over `Ex`: `pypto.<fn>(...)` calls with the operator rules applied as they are built."""

    def call(self, fn: str, *args: Any) -> Ex:
        return call(fn, *args)

    def cast(self, x: Any, dtype: str, mode: str | None = None) -> Ex:
        to = Ex.raw(attr(f"pypto.{PYPTO_DTYPES[dtype]}"), False)
        if mode is None:
            return call("cast", x, to)
        return call("cast", x, to, mode=Ex.raw(attr(f"pypto.CastMode.{mode}"), False))

    def literal(self, value: Any) -> float | int | None:
        if isinstance(value, Ex):
            return value.value
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None


OPS = _Ops()


def _kind(op: str | None) -> OpKind | None:
    k = registry.kind(op) if op else None
    return k if k is not None and k.is_elementwise else None


def supports(op: str | None) -> bool:
    """Whether the kernel can write the elementwise op (its registry entry has a render)."""
    k = _kind(op)
    return k is not None and k.render is not None


def why_not(op: str | None) -> str:
    """Why the kernel cannot write the op, as its registry entry says it."""
    k = _kind(op)
    if k is not None and k.unsupported:
        return k.unsupported
    return f"no pypto form for the elementwise op '{op}' yet"


def arity(op: str | None) -> int:
    """How many tensor operands the op's render takes first."""
    k = _kind(op)
    return k.arity if k is not None else 1


def kernel_params(op: str | None) -> tuple[str, ...]:
    """The parameters the op's render reads, each a scalar of the kernel, in torch's order."""
    k = _kind(op)
    return k.kernel_params if k is not None else ()


def defaults(op: str | None) -> Mapping[str, Any]:
    """torch's defaults for the op's parameters (bound when the call leaves one out)."""
    k = _kind(op)
    return k.defaults if k is not None else {}


def render(op: str, operands: Sequence[Ex], params: Mapping[str, Ex]) -> Ex:
    """The op over its operands, with its kernel parameters (`kernel_params`, bound) as `params`."""
    k = _kind(op)
    if k is None or k.render is None:
        raise ValueError(f"elementwise op '{op}': {why_not(op)}")
    out: Ex = k.render(*operands, params, OPS)
    return out
