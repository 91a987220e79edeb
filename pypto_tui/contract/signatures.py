"""Parameter lists and defaults of the torch APIs the contract reads, as data.

A static reader cannot ask torch how `nn.GroupNorm(8, 64)` binds its arguments, so the
signatures it needs are written down here (torch 2.x). Binding by these tables is what makes
positional and keyword calls give the same contract (P0.api-semantics: read the call, not the
names).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pypto_tui.ops import base as ops_base
from pypto_tui.ops.registry import REGISTRY

_REQ = object()  # marks a required parameter
REQUIRED = _REQ



def _anchor_modules() -> dict[str, tuple[tuple[str, Any], ...]]:
    """The anchor kinds' module constructors, read from their registry entries (`module_signature`): a
    new norm, loss, conv or pool module is one entry there."""
    return {m: tuple((p, _REQ if d is ops_base.REQUIRED else d) for p, d in k.module_signature)
            for k in REGISTRY.values() if k.is_anchor and k.module_signature for m in k.modules}


_ANCHOR_MODULES = _anchor_modules()


def _bound_layout(k: ops_base.OpKind) -> bool:
    """A layout kind whose function binds by torch's signature: a concatenation, a kind with torch
    defaults to fill in (F.pad's mode and value) or one that reads positions (gather's index); a
    transpose's or permute's spellings have rows below."""
    return k.role == "layout" and (k.arity == -1 or bool(k.defaults) or bool(k.index_inputs))


def _anchor_calls() -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, Any]]]:
    """The anchor kinds' functions, read from their registry entries: each spelling's parameters
    (`inputs`, then `params`, torch's order) and torch's defaults (a kind the contract reads without a
    torch spelling, nansum, under its name). The rows below override the spellings whose parameters
    differ within a kind."""
    kinds = [k for k in REGISTRY.values() if k.is_anchor and not k.spelled_as
             and (k.role not in ("matmul", "layout", "other") or _bound_layout(k))]
    calls = {f: (*k.inputs, *k.params) for k in kinds for f in (k.functions or (k.name,))}
    defaults = {f: dict(k.defaults) for k in kinds if k.defaults for f in (k.functions or (k.name,))}
    return calls, defaults


_ANCHOR_CALLS, _ANCHOR_DEFAULTS = _anchor_calls()


def _elementwise_rows() -> tuple[dict[str, tuple[tuple[str, Any], ...]], dict[str, tuple[str, ...]],
                                 dict[str, dict[str, Any]]]:
    """The elementwise kinds' rows, read from their registry entries (a new activation is one entry
    there): each module type's constructor, each unary kind's call (the tensor, then its parameters in
    torch's order) and torch's defaults for them."""
    kinds = [k for k in REGISTRY.values() if k.is_elementwise]
    modules = {m: tuple((p, _REQ if d is ops_base.REQUIRED else d) for p, d in k.module_signature)
               for k in kinds for m in k.modules}
    calls = {k.name: ("input", *k.params) for k in kinds if k.arity == 1 and k.params}
    defaults = {k.name: dict(k.defaults) for k in kinds if k.defaults}
    return modules, calls, defaults


_ELEMENTWISE_MODULES, _ELEMENTWISE_CALLS, _ELEMENTWISE_DEFAULTS = _elementwise_rows()

# nn module constructors: type -> ((param, default), ...). REQUIRED marks required ones.
MODULE_SIGS: dict[str, tuple[tuple[str, Any], ...]] = {
    **_ANCHOR_MODULES,
    **_ELEMENTWISE_MODULES,
    # one pool kind, two constructors: torch's AvgPool1d has no divisor_override (its kind's row is 2-D / 3-D's)
    "AvgPool1d": (("kernel_size", _REQ), ("stride", None), ("padding", 0), ("ceil_mode", False),
                  ("count_include_pad", True)),
    # no registry kind yet: the contract reads the module and says it has no kernel
    "MultiheadAttention": (("embed_dim", _REQ), ("num_heads", _REQ), ("dropout", 0.0), ("bias", True)),
    "Flatten": (("start_dim", 1), ("end_dim", -1)),
}

_RED = ("input", "dim", "keepdim")

# Functions and tensor methods: canonical name -> positional parameter order (defaults below).
FUNC_SIGS: dict[str, tuple[str, ...]] = {
    **_ANCHOR_CALLS,
    **_ELEMENTWISE_CALLS,
    # torch.max / torch.min: a reduction over dim or the elementwise maximum (the matcher tells which)
    "max": _RED, "min": _RED,
    # one kind, three spellings: torch.norm's p, linalg's ord
    "norm": ("input", "p", "dim", "keepdim", "out", "dtype"),
    "linalg.norm": ("input", "ord", "dim", "keepdim"),
    "linalg.vector_norm": ("input", "ord", "dim", "keepdim"),
    "narrow": ("input", "dim", "start", "length"), "select": ("input", "dim", "index"),
    "unsqueeze": ("input", "dim"), "squeeze": ("input", "dim"), "expand": ("input", "size"),
    # one kind, several spellings whose second operand torch names differently
    "matmul": ("input", "other"), "mm": ("input", "mat2"), "bmm": ("input", "mat2"),
    "mv": ("input", "vec"),
    "tril": ("input", "diagonal"), "triu": ("input", "diagonal"),
    "diag": ("input", "diagonal"),
    "transpose": ("input", "dim0", "dim1"),
    "pow": ("input", "exponent"),
    # one pool kind: torch's avg_pool1d has no divisor_override
    "avg_pool1d": ("input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad"),
}

FUNC_DEFAULTS: dict[str, dict[str, Any]] = {
    **_ANCHOR_DEFAULTS,
    **_ELEMENTWISE_DEFAULTS,
    "max": {"dim": None, "keepdim": False}, "min": {"dim": None, "keepdim": False},
    "norm": {"p": "fro", "dim": None, "keepdim": False},
    "linalg.norm": {"ord": None, "dim": None, "keepdim": False},
    "linalg.vector_norm": {"ord": 2, "dim": None, "keepdim": False},
    "tril": {"diagonal": 0}, "triu": {"diagonal": 0}, "diag": {"diagonal": 0},
}


def bind(params: Sequence[str], args: Sequence[Any], kwargs: Mapping[str, Any],
         defaults: Mapping[str, Any] | None = None) -> tuple[dict[str, Any], list[str]]:
    """Bind positional and keyword arguments to `params`. Returns (bound, problems)."""
    bound: dict[str, Any] = dict(defaults or {})
    problems: list[str] = []
    for i, a in enumerate(args):
        if i < len(params):
            bound[params[i]] = a
        else:
            problems.append(f"extra positional argument #{i + 1}")
    for k, v in kwargs.items():
        if k in params or not params:
            bound[k] = v
        else:
            bound[k] = v
            problems.append(f"unexpected keyword '{k}'")
    return bound, problems


def bind_module(type_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Bind an nn module constructor call; missing required parameters are reported."""
    sig = MODULE_SIGS.get(type_name)
    if sig is None:
        bound = {f"arg{i}": a for i, a in enumerate(args)}
        bound.update(kwargs)
        return bound, [f"nn.{type_name} is not in the signature table"]
    params = [p for p, _ in sig]
    defaults = {p: d for p, d in sig if d is not _REQ}
    bound, problems = bind(params, args, kwargs, defaults)
    for p, d in sig:
        if d is _REQ and p not in bound:
            problems.append(f"missing required argument '{p}'")
    return bound, problems
