"""PyPTO expressions as syntax-tree nodes, with the operator rules applied as they are built (P5).

Pattern code writes maths with ordinary Python operators on `Ex` values (`pos + (exp(neg) - 1.0)
* alpha`), and this module turns each operation into libcst nodes that respect the rules the
documents set for kernels:

- `-` and `/` take the tensor on the left: `c - x` is built as `x * (-1.0) + c` and `c / x` as
  `pypto.reciprocal(x) * c` (P5.tensor-left);
- a tensor is never negated with unary minus: `-x` is built as `x * (-1.0)` (P5.no-unary-minus);
- `+` and `*` accept a scalar on either side, but the tensor is put first anyway, so every
  generated expression reads the same way;
- a pypto function's first argument is a tensor (P5.tensor-first-arg): `maximum(0.0, x)` is
  swapped to `maximum(x, 0.0)`;
- reductions take one int dim and there is no `pypto.mean` (API.single-dim-reduce): `mean` is
  `sum(x, dim) * (1/count)` with the reciprocal computed by the caller.

Parentheses are inserted from operator precedence, so the text always means the tree that was
built (evaluation order included, which matters for floats).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import libcst as cst

from pypto_tui.codegen.rewrite import code_of
from pypto_tui.findings import cites

ATOM, POW, UNARY, MUL, ADD, CMP = 10, 5, 4, 3, 2, 1
_OPS: dict[str, tuple[Any, int]] = {
    "+": (cst.Add, ADD), "-": (cst.Subtract, ADD), "*": (cst.Multiply, MUL), "/": (cst.Divide, MUL),
    "**": (cst.Power, POW), "//": (cst.FloorDivide, MUL),
}
COMMUTATIVE_CALLS = frozenset({"maximum", "minimum", "add", "mul"})
SINGLE_DIM_REDUCTIONS = frozenset({"sum", "amax", "amin", "prod"})
PYPTO = "pypto"


def number_node(value: float | int, paren: bool = True) -> cst.BaseExpression:
    """A literal; negative numbers are parenthesised, as the documents write `x * (-1.0)`."""
    if isinstance(value, bool):
        return cst.Name("True" if value else "False")
    text = repr(float(value)) if isinstance(value, float) else str(int(value))
    if text in ("inf", "-inf", "nan"):
        raise ValueError(f"cannot write {value!r} as a literal")
    if text.startswith("-"):
        inner = cst.Float(text[1:]) if isinstance(value, float) else cst.Integer(text[1:])
        if not paren:
            return cst.UnaryOperation(cst.Minus(), inner)
        return cst.UnaryOperation(cst.Minus(), inner, lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Float(text) if isinstance(value, float) else cst.Integer(text)


def _paren(node: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(node, "lpar", None):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


@cites("P5.tensor-left", "P5.no-unary-minus", "API.single-dim-reduce")
@dataclass(frozen=True, eq=False)
class Ex:
    """One expression: its node, whether it is a tensor, and its precedence (for parentheses).

    `value` is set for literal numbers, so `1.0 - x` can be rewritten and `x * 1.0` dropped.
    """

    node: cst.BaseExpression
    tensor: bool
    prec: int = ATOM
    value: float | int | None = None

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def name(name: str, tensor: bool = True) -> Ex:
        return Ex(cst.Name(name), tensor)

    @staticmethod
    def num(value: float | int) -> Ex:
        return Ex(number_node(value), False, ATOM, value)

    @staticmethod
    def of(value: Any) -> Ex:
        if isinstance(value, Ex):
            return value
        if isinstance(value, bool | int | float):
            return Ex.num(value)
        raise TypeError(f"cannot use {value!r} in a kernel expression")

    @staticmethod
    def raw(node: cst.BaseExpression, tensor: bool, prec: int = ATOM) -> Ex:
        return Ex(node, tensor, prec)

    # ------------------------------------------------------------------ operators (P5)
    def __add__(self, other: Any) -> Ex:
        return add(self, other)

    def __radd__(self, other: Any) -> Ex:
        return add(other, self)

    def __sub__(self, other: Any) -> Ex:
        return sub(self, other)

    def __rsub__(self, other: Any) -> Ex:
        return sub(other, self)

    def __mul__(self, other: Any) -> Ex:
        return mul(self, other)

    def __rmul__(self, other: Any) -> Ex:
        return mul(other, self)

    def __truediv__(self, other: Any) -> Ex:
        return div(self, other)

    def __rtruediv__(self, other: Any) -> Ex:
        return div(other, self)

    def __neg__(self) -> Ex:
        return neg(self)

    def __pow__(self, other: Any) -> Ex:
        return power(self, other)

    def method(self, name: str, *args: Any, **kwargs: Any) -> Ex:
        """`x.move(...)`-style call (statements use it; the result is not a tensor)."""
        return Ex(cst.Call(cst.Attribute(_paren(self.node) if self.prec < ATOM else self.node, cst.Name(name)),
                           _args(args, kwargs)), False)


def _binop(op: str, a: Ex, b: Ex) -> Ex:
    kind, prec = _OPS[op]
    left = _paren(a.node) if a.prec < prec or (op == "**" and a.prec <= prec) else a.node
    right = _paren(b.node) if b.prec <= prec and not (op == "**" and b.prec > prec) else b.node
    node = cst.BinaryOperation(left, kind(whitespace_before=cst.SimpleWhitespace(" "),
                                          whitespace_after=cst.SimpleWhitespace(" ")), right)
    return Ex(node, a.tensor or b.tensor, prec)


def _fold(a: Ex, b: Ex, fn: Any) -> Ex | None:
    if a.value is not None and b.value is not None:
        return Ex.num(fn(a.value, b.value))
    return None


def add(a: Any, b: Any) -> Ex:
    lhs, rhs = Ex.of(a), Ex.of(b)
    folded = _fold(lhs, rhs, lambda x, y: x + y)
    if folded is not None:
        return folded
    if rhs.tensor and not lhs.tensor:  # tensor first; + is commutative
        lhs, rhs = rhs, lhs
    if rhs.value == 0 and lhs.tensor:
        return lhs
    return _binop("+", lhs, rhs)


def mul(a: Any, b: Any) -> Ex:
    lhs, rhs = Ex.of(a), Ex.of(b)
    folded = _fold(lhs, rhs, lambda x, y: x * y)
    if folded is not None:
        return folded
    if rhs.tensor and not lhs.tensor:
        lhs, rhs = rhs, lhs
    if rhs.value == 1 and lhs.tensor:
        return lhs
    return _binop("*", lhs, rhs)


def sub(a: Any, b: Any) -> Ex:
    lhs, rhs = Ex.of(a), Ex.of(b)
    folded = _fold(lhs, rhs, lambda x, y: x - y)
    if folded is not None:
        return folded
    if rhs.tensor and not lhs.tensor:
        # P5.tensor-left: c - x  ->  x * (-1.0) + c
        flipped = mul(rhs, Ex.num(-1.0))
        return flipped if lhs.value == 0 else add(flipped, lhs)
    if rhs.value == 0 and lhs.tensor:
        return lhs
    return _binop("-", lhs, rhs)


def div(a: Any, b: Any) -> Ex:
    lhs, rhs = Ex.of(a), Ex.of(b)
    if lhs.value is not None and rhs.value is not None:
        return Ex.num(lhs.value / rhs.value)
    if rhs.tensor and not lhs.tensor:
        # P5.tensor-left: c / x  ->  pypto.reciprocal(x) * c
        r = call("reciprocal", rhs)
        return r if lhs.value == 1 else mul(r, lhs)
    if rhs.value == 1 and lhs.tensor:
        return lhs
    return _binop("/", lhs, rhs)


def neg(a: Any) -> Ex:
    a = Ex.of(a)
    if a.value is not None:
        return Ex.num(-a.value)
    # P5.no-unary-minus for tensors; for a closure scalar too, so a reader (or the lint, which may
    # not know the name is a scalar) never sees `-name` in a kernel
    return mul(a, Ex.num(-1.0))


def power(a: Any, b: Any) -> Ex:
    a, b = Ex.of(a), Ex.of(b)
    if a.tensor:
        if b.value == 2:
            return mul(a, a) if a.prec == ATOM else call("pow", a, b)
        if b.value == 0.5:
            return call("sqrt", a)
        return call("pow", a, b)
    return _binop("**", a, b)


def _args(args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> list[cst.Arg]:
    out = [cst.Arg(_arg_node(a)) for a in args]
    for k, v in (kwargs or {}).items():
        out.append(cst.Arg(_arg_node(v), keyword=cst.Name(k),
                           equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))))
    return out


def _arg_node(a: Any) -> cst.BaseExpression:
    if isinstance(a, Ex):
        return a.node
    if isinstance(a, cst.BaseExpression):
        return a
    if isinstance(a, bool | int | float):
        return number_node(a)
    if isinstance(a, str):
        return cst.SimpleString(repr(a))
    if isinstance(a, list | tuple):
        elems = [cst.Element(_arg_node(x)) for x in a]
        return cst.List(elems) if isinstance(a, list) else cst.Tuple(elems)
    raise TypeError(f"cannot pass {a!r} to a pypto call")


def call(fn: str, *args: Any, tensor: bool = True, **kwargs: Any) -> Ex:
    """`pypto.<fn>(...)`. A scalar first argument is swapped for commutative functions and refused
    otherwise (P5.tensor-first-arg)."""
    items = list(args)
    if items and isinstance(items[0], Ex | int | float) and not (isinstance(items[0], Ex) and items[0].tensor):
        if fn in COMMUTATIVE_CALLS and len(items) == 2 and isinstance(items[1], Ex) and items[1].tensor:
            items = [items[1], items[0]]
        elif tensor:
            raise ValueError(f"pypto.{fn}: the first argument must be a tensor (P5.tensor-first-arg)")
    node = cst.Call(cst.Attribute(cst.Name(PYPTO), cst.Name(fn)), _args(items, kwargs))
    return Ex(node, tensor)


def reduce(op: str, x: Ex, dim: int, keepdim: bool) -> Ex:
    """`pypto.sum/amax/amin(x, dim, keepdim=...)`: one int dim only (API.single-dim-reduce)."""
    if op not in SINGLE_DIM_REDUCTIONS:
        raise ValueError(f"pypto has no single-call '{op}' reduction (API.single-dim-reduce)")
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise ValueError("a pypto reduction takes one int dim (API.single-dim-reduce)")
    return call(op, x, dim, keepdim=keepdim) if keepdim else call(op, x, dim)


def column_sum(column: Ex, rows: str) -> Ex:
    """The sum of a (rows, 1) column as a (1, 1) tensor: the column laid out as one (1, rows) row and
    summed along it (LOSS.scalar-rows). Summed down the column with the rows' own vec tile it cost
    KernelBench 94 (MSE at (1024, 1024)) 29.1 us against 18.4, and 95 (cross-entropy at (256, 4096))
    27.5 against 18.3 (pypto 0.2.0 SIM); both forms verify with every pass row."""
    row = cst.List([cst.Element(number_node(1)), cst.Element(cst.Name(rows))])
    return reduce("sum", call("reshape", column, row), 1, True)


def mean(x: Ex, dim: int, keepdim: bool, inv_count: Ex) -> Ex:
    """No pypto.mean: sum times the reciprocal of the count (API.single-dim-reduce)."""
    return mul(reduce("sum", x, dim, keepdim), inv_count)


def code(e: Ex | cst.CSTNode) -> str:
    """The source text of an expression (tests and messages)."""
    node = e.node if isinstance(e, Ex) else e
    return code_of(node)
