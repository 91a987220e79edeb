"""Compile-time values in a kernel module, with the contract's evaluator (one evaluator, two readers).

`contract.values.Evaluator` runs a task file's statements into an environment. A kernel module is
read differently: names are resolved where they are used, through the scopes `analysis` builds
(a module constant, a closure variable of the factory, a local of the kernel), and only when the
name is bound exactly once. This subclass plugs that lookup into the shared evaluator and adds
what kernels need: `x.shape` of an annotated tensor parameter (a DYNAMIC axis is unknown), calls
to small helpers of the module (`def ceil_div(a, b): return ...`), `pypto.ceildiv` / `pypto.min`
on plain ints. Anything else is `Unknown`, and the rules stay silent on unknowns.

Values come out through `plain_value` (numbers, bools, tuples of them; lists become tuples) or
`dims_of` (one entry per axis, None for an axis whose size is not a compile-time int).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import libcst as cst

from pypto_tui.contract.values import DType, Evaluator, Ref, Unknown


class Scope(Protocol):
    """A function's or the module's names (analysis.Scope); only its enclosing scope is read here."""

    @property
    def parent(self) -> Scope | None: ...


class ModuleInfo(Protocol):
    """What the evaluator asks of analysis.ModuleInfo, stated here so that this module does not
    import analysis (which imports it): the parsed module, its import aliases, its scopes, name
    lookup and the kernels' annotated tensor parameters."""

    module: cst.Module
    aliases: dict[str, str]

    @property
    def scopes(self) -> Any: ...

    def lookup(self, name: str, scope: Any) -> tuple[Any, Any]: ...

    def param_tensor(self, scope: Any, name: str) -> KernelTensor | None: ...

DYNAMIC_DIMS = frozenset({"pypto.DYNAMIC", "pypto.DYN"})
DYNAMIC_FACTORIES = frozenset({"pypto.frontend.dynamic"})
MAX_CALL_DEPTH = 8
_BIG = 10**18
# Builtins whose result a static reader can compute cheaply from small constants (no range():
# `range(10**12)` would be built in full).
_SAFE_BUILTINS = frozenset({"int", "float", "bool", "abs", "round", "len", "max", "min", "tuple", "list", "sum"})
_PYPTO_INT_FUNCS: dict[str, Callable[[int, int], int]] = {
    "pypto.ceildiv": lambda a, b: -(-a // b), "pypto.ceil_div": lambda a, b: -(-a // b),
    "pypto.min": min, "pypto.max": max,
}


class ScopeEnv(dict[str, Any]):
    """Names bound on the spot (comprehension variables, a helper's arguments) plus the scope where
    every other name is looked up, and the bindings being resolved (a cycle guard)."""

    def __init__(self, scope: Scope, seen: frozenset[Any] = frozenset(), names: dict[str, Any] | None = None) -> None:
        super().__init__(names or {})
        self.scope, self.seen = scope, seen


@dataclass(frozen=True)
class KernelTensor:
    """An annotated tensor parameter of a jit kernel: `x.shape` and `x.dtype` are compile-time."""

    shape: tuple[int | None, ...] | None
    dtype: str | None


@dataclass(frozen=True)
class LocalFunction:
    """A function defined in the module; a call evaluates it when its body is one `return`."""

    node: cst.FunctionDef
    scope: Scope


class ScopeEvaluator(Evaluator):
    """The contract's evaluator reading names through the lint's scopes."""

    def __init__(self, info: ModuleInfo) -> None:
        super().__init__(info.module, info.aliases, {})
        self.info = info
        self._depth = 0

    def _ev(self, node: cst.BaseExpression, env: dict[str, Any]) -> Any:
        if isinstance(node, cst.Ellipsis):
            return Ellipsis  # `Tensor([DYNAMIC, ...])`: the rank is not stated
        return super()._ev(node, env)

    def value(self, expr: cst.BaseExpression, scope: Scope) -> Any:
        return self.ev(expr, ScopeEnv(scope))

    # ------------------------------------------------------------------------------ names
    def child_env(self, env: dict[str, Any], names: dict[str, Any]) -> dict[str, Any]:
        if isinstance(env, ScopeEnv):
            return ScopeEnv(env.scope, env.seen, {**env, **names})
        return super().child_env(env, names)

    def _name(self, name: str, env: Any) -> Any:
        if name in env or not isinstance(env, ScopeEnv):
            return super()._name(name, env)
        owner, bindings = self.info.lookup(name, env.scope)
        if owner is None:
            return super()._name(name, {})
        key = (id(owner), name)
        if key in env.seen:
            return Unknown(f"'{name}' refers to itself")
        if bindings is None:  # a parameter
            tensor = self.info.param_tensor(owner, name)
            return tensor if tensor is not None else Unknown(f"'{name}' is a parameter")
        if len(bindings) != 1:
            return Unknown(f"'{name}' is bound more than once")
        b = bindings[0]
        if b.how == "import":
            return super()._name(name, {})
        if b.how == "def" and isinstance(b.node, cst.FunctionDef):
            return LocalFunction(b.node, self.info.scopes.get(b.node, owner))
        if b.how != "assign" or b.value is None:
            return Unknown(f"'{name}' is not a constant")
        return self._ev(b.value, ScopeEnv(owner, env.seen | {key}))

    def _attr(self, base: Any, attr: str, node: cst.CSTNode) -> Any:
        if isinstance(base, KernelTensor):
            if attr == "shape" and base.shape is not None:
                return tuple(Unknown("a dynamic axis") if d is None else d for d in base.shape)
            if attr == "dtype" and base.dtype is not None:
                return DType(base.dtype)
            return Unknown(f"'.{attr}' of a tensor parameter")
        return super()._attr(base, attr, node)

    # ------------------------------------------------------------------------------ calls
    def call(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: cst.CSTNode) -> Any:
        if isinstance(func, LocalFunction):
            return self._local_call(func, args, kwargs, node)
        if isinstance(func, Ref):
            if func.dotted in _PYPTO_INT_FUNCS:
                if kwargs or len(args) != 2 or not all(_is_int(a) for a in args):
                    return Unknown(f"'{self.code(node)}' is computed when the kernel runs")
                return _PYPTO_INT_FUNCS[func.dotted](*args)
            if func.dotted.startswith("builtins.") and func.dotted[9:] not in _SAFE_BUILTINS:
                return Unknown(f"'{self.code(node)}' is not evaluated statically")
            if func.dotted in DYNAMIC_FACTORIES:
                return Ref("pypto.DYNAMIC")  # `pypto.frontend.dynamic("bs")`: a dynamic axis
            if func.dotted.startswith(("pypto.", "torch.")):
                return Unknown(f"'{self.code(node)}' is not a compile-time constant")
        return super().call(func, args, kwargs, node)

    def _local_call(self, fn: LocalFunction, args: list[Any], kwargs: dict[str, Any], node: cst.CSTNode) -> Any:
        body = _single_return(fn.node)
        params = fn.node.params
        if body is None or params.kwonly_params or params.posonly_params or isinstance(
            params.star_arg, cst.Param
        ) or params.star_kwarg is not None or len(args) > len(params.params):
            return Unknown(f"'{self.code(node)}' calls a function the reader does not evaluate")
        bound = {p.name.value: a for p, a in zip(params.params, args, strict=False)}
        for p in params.params[len(args):]:
            name = p.name.value
            if name in kwargs:
                bound[name] = kwargs.pop(name)
            elif p.default is not None:
                bound[name] = self.ev(p.default, ScopeEnv(fn.scope.parent or fn.scope))
            else:
                return Unknown(f"'{self.code(node)}' leaves '{name}' unset")
        unknown = next((v for v in bound.values() if isinstance(v, Unknown)), None)
        if kwargs or unknown is not None:
            return unknown or Unknown(f"'{self.code(node)}' passes keywords the function does not take")
        if self._depth >= MAX_CALL_DEPTH:
            return Unknown("helpers call each other too deeply")
        self._depth += 1
        try:
            return self._ev(body, ScopeEnv(fn.scope, names=bound))
        finally:
            self._depth -= 1


def _single_return(fn: cst.FunctionDef) -> cst.BaseExpression | None:
    """The expression of a function whose body is (a docstring and) one `return expr`."""
    stmts = list(fn.body.body) if isinstance(fn.body, cst.IndentedBlock) else [fn.body]
    if stmts and isinstance(stmts[0], cst.SimpleStatementLine) and len(stmts[0].body) == 1 and isinstance(
        stmts[0].body[0], cst.Expr
    ) and isinstance(stmts[0].body[0].value, cst.SimpleString | cst.ConcatenatedString):
        stmts = stmts[1:]
    if len(stmts) != 1:
        return None
    line = stmts[0]
    if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and isinstance(line.body[0], cst.Return):
        return line.body[0].value
    if isinstance(line, cst.SimpleStatementSuite) and len(line.body) == 1 and isinstance(line.body[0], cst.Return):
        return line.body[0].value
    return None


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def plain_value(v: Any) -> Any:
    """A compile-time number, bool or tuple of them (lists read as tuples); None for anything else."""
    if isinstance(v, bool):
        return v
    if isinstance(v, int | float):
        if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
            return None
        return v if abs(v) <= _BIG else None
    if isinstance(v, list | tuple):
        items = [plain_value(x) for x in v]
        return None if any(x is None for x in items) else tuple(items)
    return None


def dims_of(v: Any) -> tuple[int | None, ...] | None:
    """One entry per axis of a shape value (None where the size is not a compile-time int);
    None when `v` is not a sequence, or holds `...` (the rank itself is unknown)."""
    if not isinstance(v, list | tuple):
        return None
    out: list[int | None] = []
    for d in v:
        if d is Ellipsis:
            return None
        out.append(d if _is_int(d) and 0 <= d <= _BIG else None)
    return tuple(out)


def is_dynamic_marker(v: Any) -> bool:
    """`pypto.DYNAMIC` / `pypto.DYN` as the evaluator sees them."""
    return isinstance(v, Ref) and v.dotted in DYNAMIC_DIMS
