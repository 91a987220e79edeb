"""The registry: every `KINDS` tuple of the modules in this package, looked up by name or spelling.

The modules are listed here once (not discovered from the file system) so the registry is the same
in a wheel, a zip import and a source tree; adding a module is one line below.
"""

from __future__ import annotations

from types import MappingProxyType

from pypto_tui.ops import conv, elementwise, layout, loss, matmul, norm, pool, recurrent, reduce, scan, softmax, views
from pypto_tui.ops.base import OpKind

_MODULES = (views, elementwise, matmul, conv, pool, reduce, norm, softmax, scan, layout, loss, recurrent)


def _collect() -> dict[str, OpKind]:
    out: dict[str, OpKind] = {}
    for mod in _MODULES:
        for k in mod.KINDS:
            if k.name in out:
                raise RuntimeError(f"operator kind '{k.name}' is registered twice")
            out[k.name] = k
    return out


REGISTRY = MappingProxyType(_collect())


def _index(attr: str) -> dict[str, OpKind]:
    out: dict[str, OpKind] = {}
    for k in REGISTRY.values():
        for spelling in getattr(k, attr):
            out.setdefault(spelling, k)
    return out


_FUNCTIONS = _index("functions")
_METHODS = _index("methods")
_MODULE_TYPES = _index("modules")
_ATEN = _index("aten")


def kind(name: str) -> OpKind | None:
    """The kind registered under `name`."""
    return REGISTRY.get(name)


def by_spelling(name: str, how: str = "torch") -> OpKind | None:
    """The kind a call spells: `how` is the reader's call form ("torch", "F", "method", "other")."""
    if how == "method":
        return _METHODS.get(name) or _FUNCTIONS.get(name)
    return _FUNCTIONS.get(name) or _METHODS.get(name)


def by_module(type_name: str) -> OpKind | None:
    """The kind an `nn.<type_name>` module computes."""
    return _MODULE_TYPES.get(type_name)


def by_aten(name: str) -> OpKind | None:
    """The kind an ATen operator computes (`aten.relu.default`), as an exported graph names it."""
    return _ATEN.get(name)


def conversion_to(dtype: str) -> OpKind | None:
    """The elementwise kind whose result is `dtype` whatever its input's (int8: `x.char()`)."""
    return next((k for k in REGISTRY.values() if k.dtype == dtype and k.is_elementwise), None)


def element_of(kind: OpKind, index: int) -> OpKind | None:
    """The kind that computes element `index` of the tuple `kind` returns (`returns`): the kind itself for
    the first, `<kind>_<name>` for another (topk's indices: topk_indices), None when none does."""
    if index == 0:
        return kind
    if not 0 < index < len(kind.returns):
        return None
    return REGISTRY.get(f"{kind.name}_{kind.returns[index]}")


_ELEMENTS = {part.name: (whole, i) for whole in REGISTRY.values() for i in range(1, len(whole.returns))
             if (part := element_of(whole, i)) is not None}


def tuple_of(kind: OpKind) -> tuple[OpKind, int] | None:
    """The tuple-returning kind `kind` computes an element of, and which: (topk, 0) for topk, (topk, 1) for
    topk_indices; None for a kind whose call returns one tensor."""
    if kind.returns:
        return kind, 0
    return _ELEMENTS.get(kind.name)


def of_contract(op: str | None) -> OpKind | None:
    """The kind a contract's op names: the kind of that name, or for `torch.max(x, dim)` and
    `torch.min(x, dim)` (a contract's "max" / "min" reduction) the dim form the graph reader calls
    max_dim / min_dim."""
    if not op:
        return None
    return REGISTRY.get(op) or REGISTRY.get(f"{op}_dim")
