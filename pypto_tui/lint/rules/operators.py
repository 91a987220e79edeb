"""Operator rules (P5): the tensor goes first in `-`, `/` and in pypto calls; no unary minus.

The rule documents report a crash for a scalar on the left (pypto 0.2.0 happens to accept it), so
the lint keeps kernels to the documented form. The two rewrites are mechanical and exact:

* `c - x`  ->  `x * (-1.0) + c`
* `c / x`  ->  `pypto.reciprocal(x) * c`
* `-x`     ->  `x * (-1.0)`

`pypto.reciprocal` is public API (PyPTO's docs; `op/math.py` of the 0.2.0 wheel), and 0.2.0's own
`Tensor.__rtruediv__` builds exactly `pypto.mul(pypto.reciprocal(x), c)`, so the rewrite traces to
the same graph the compiler would build for `c / x`.

Only expressions whose right side is known to be a tensor (see `analysis.Kind`) are touched.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import Kind, numeric_literal, positional_args
from pypto_tui.lint.base import Invalid, LintRule, example

_HEAD = """\
import pypto

N = 16384


@pypto.frontend.jit
def kernel(x: pypto.Tensor((N,), pypto.DT_FP32), out: pypto.Tensor((N,), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(8192)
"""
# Line numbers of the examples below count from here: the body starts on line 9.


# The examples are KernelBench modules (a ModelNew); P5.tensor-first-arg is the documents' advice for
# those, which a library kernel (no ModelNew) hears with --strict only.
MODEL_NEW_TAIL = """

class ModelNew:
    def forward(self, x):
        return x
"""


def _k(body: str) -> str:
    return _HEAD + textwrap.indent(example(body), "    ") + MODEL_NEW_TAIL


def _lib(body: str) -> str:
    """The same kernel in a library module (no ModelNew)."""
    return _HEAD + textwrap.indent(example(body), "    ")


def _snippet(node: cst.CSTNode, limit: int = 60) -> str:
    code = cst.Module([]).code_for_node(node).replace("\n", " ")
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _neg_one() -> cst.UnaryOperation:
    return cst.UnaryOperation(cst.Minus(), cst.Float("1.0"), lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _unparen(expr: cst.BaseExpression) -> cst.BaseExpression:
    if getattr(expr, "lpar", None):
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def times_minus_one(x: cst.BaseExpression) -> cst.BinaryOperation:
    return cst.BinaryOperation(x, cst.Multiply(), _neg_one())


def fix_scalar_sub(c: cst.BaseExpression, x: cst.BaseExpression) -> cst.BaseExpression:
    """`c - x` -> `x * (-1.0) + c` (or `x * (-1.0)` for c == 0, `x * (-1.0) - k` for c == -k)."""
    neg = times_minus_one(x)
    if numeric_literal(c) == 0:
        return neg
    if isinstance(c, cst.UnaryOperation) and isinstance(c.operator, cst.Minus) and not c.lpar:
        return cst.BinaryOperation(neg, cst.Subtract(), c.expression)
    if isinstance(c, cst.BinaryOperation) and isinstance(c.operator, cst.Add | cst.Subtract):
        c = _paren(c)
    return cst.BinaryOperation(neg, cst.Add(), c)


def fix_scalar_div(c: cst.BaseExpression, x: cst.BaseExpression, pypto: str) -> cst.BaseExpression:
    """`c / x` -> `pypto.reciprocal(x) * c` (just `pypto.reciprocal(x)` for c == 1)."""
    recip = cst.Call(cst.Attribute(cst.Name(pypto), cst.Name("reciprocal")), [cst.Arg(_unparen(x))])
    if numeric_literal(c) == 1:
        return recip
    if (isinstance(c, cst.BinaryOperation) and not isinstance(c.operator, cst.Power)) or isinstance(
        c, cst.UnaryOperation
    ):
        c = _paren(c)
    return cst.BinaryOperation(recip, cst.Multiply(), c)


class ScalarLeft(LintRule):
    CHECK = "lint.scalar_left"
    RULE = "P5.tensor-left"
    MESSAGE = "scalar on the left of `-` or `/`: put the tensor first"
    VALID = (
        _k("""\
            out.move(x * (-1.0) + 1.0)
        """),
        _k("""\
            out.move(x - 1.0)
        """),
        _k("""\
            out.move(pypto.reciprocal(pypto.exp(x) + 1.0) * 2.0)
        """),
        # scalar arithmetic on loop indices and closure constants is not tensor arithmetic
        _k("""\
            for i in pypto.loop(4):
                off = N - (i + 1) * 4096
                pypto.assemble(pypto.view(x, [4096], [off]) * 2.0, [off], out)
        """),
        # one element of a tensor (every axis indexed) is a scalar: index arithmetic, not a tensor op
        _HEAD.replace("out: pypto.Tensor((N,), pypto.DT_FP32)", "cu: pypto.Tensor((5,), pypto.DT_INT32), "
                      "out: pypto.Tensor((N,), pypto.DT_FP32)") + textwrap.indent(example("""\
            for b in pypto.loop(4):
                rows = cu[b + 1] - cu[b]
                pypto.assemble(pypto.view(x, [4096], [b * 4096], valid_shape=[rows]) * 2.0, [b * 4096], out)
        """), "    "),
        # outside a jit kernel nothing is checked
        "import torch\n\n\ndef f(x):\n    return 1.0 - torch.exp(x)\n",
    )
    INVALID = (
        Invalid(_k("""\
            out.move(1.0 - x)
        """), line=9, col=14, fixed=_k("""\
            out.move(x * (-1.0) + 1.0)
        """)),
        Invalid(_k("""\
            out.move(1.0 / (pypto.exp(x * (-1.0)) + 1.0))
        """), line=9, fixed=_k("""\
            out.move(pypto.reciprocal(pypto.exp(x * (-1.0)) + 1.0))
        """)),
        Invalid(_k("""\
            y = pypto.exp(x)
            out.move(2.0 / y)
        """), line=10, fixed=_k("""\
            y = pypto.exp(x)
            out.move(pypto.reciprocal(y) * 2.0)
        """)),
        Invalid(_k("""\
            out.move((0.0 - x) * 3.0)
        """), line=9, fixed=_k("""\
            out.move((x * (-1.0)) * 3.0)
        """)),
        Invalid(_k("""\
            margin = 1.0
            out.move(pypto.maximum(margin - x, 0.0))
        """), line=10, fixed=_k("""\
            margin = 1.0
            out.move(pypto.maximum(x * (-1.0) + margin, 0.0))
        """)),
        # a library kernel (PyPTO's operator tests: 0 of 3 right, benchmarks/lint_judged_pypto.csv): --strict only
        Invalid(_lib("""\
            out.move(1.0 - x)
        """), line=9, strict=True, fixed=_lib("""\
            out.move(x * (-1.0) + 1.0)
        """)),
    )

    @m.visit(m.BinaryOperation(operator=m.Subtract() | m.Divide()))
    def check_binary(self, node: cst.BinaryOperation) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        if self.info.kind_of(node.left, k) is not Kind.SCALAR or self.info.kind_of(node.right, k) is not Kind.TENSOR:
            return
        if not self.docs_advice_applies():  # a library kernel hears the documents' style with --strict only
            return
        if isinstance(node.operator, cst.Subtract):
            fixed = fix_scalar_sub(node.left, node.right)
        else:
            fixed = fix_scalar_div(node.left, node.right, self.info.pypto_alias())
        fixed = fixed.with_changes(lpar=node.lpar, rpar=node.rpar)
        op = "-" if isinstance(node.operator, cst.Subtract) else "/"
        self.report(
            node,
            f"`{_snippet(node)}`: scalar on the left of `{op}`; write `{_snippet(fixed)}`",
            replacement=fixed,
        )


class UnaryMinus(LintRule):
    CHECK = "lint.unary_minus"
    RULE = "P5.no-unary-minus"
    MESSAGE = "unary minus on a tensor: multiply by -1.0"
    VALID = (
        _k("""\
            out.move(x * (-1.0))
        """),
        _k("""\
            out.move(x * -1.0 + pypto.exp(x))
        """),
        _k("""\
            for i in pypto.loop(2):
                pypto.assemble(pypto.view(x, [8192], [-(-i) * 8192]), [i * 8192], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            out.move(-x)
        """), line=9, col=14, fixed=_k("""\
            out.move(x * (-1.0))
        """)),
        Invalid(_k("""\
            out.move(pypto.exp(-x) + 1.0)
        """), line=9, fixed=_k("""\
            out.move(pypto.exp(x * (-1.0)) + 1.0)
        """)),
        Invalid(_k("""\
            out.move(pypto.exp(x) ** -x)
        """), line=9, fixed=_k("""\
            out.move(pypto.exp(x) ** (x * (-1.0)))
        """)),
        Invalid(_k("""\
            y = pypto.exp(x)
            out.move(-y * 2.0)
        """), line=10, fixed=_k("""\
            y = pypto.exp(x)
            out.move(y * (-1.0) * 2.0)
        """)),
        # a library kernel (PyPTO's operator tests: 0 of 2 right, benchmarks/lint_judged_pypto.csv): --strict only
        Invalid(_lib("""\
            out.move(-x)
        """), line=9, strict=True, fixed=_lib("""\
            out.move(x * (-1.0))
        """)),
    )

    @m.visit(m.UnaryOperation(operator=m.Minus()))
    def check_unary(self, node: cst.UnaryOperation) -> None:
        k = self.kernel_of(node)
        if k is None or self.info.kind_of(node.expression, k) is not Kind.TENSOR:
            return
        if not self.docs_advice_applies():  # a library kernel hears the documents' style with --strict only
            return
        fixed: cst.BaseExpression = times_minus_one(node.expression)
        if node.lpar:
            fixed = fixed.with_changes(lpar=node.lpar, rpar=node.rpar)
        elif self._needs_parens(node):
            fixed = _paren(fixed)
        self.report(node, f"`{_snippet(node)}`: unary minus on a tensor; write `{_snippet(fixed)}`",
                    replacement=fixed)

    def _needs_parens(self, node: cst.UnaryOperation) -> bool:
        """`x * (-1.0)` binds looser than `-x`: parenthesise it where the context binds tighter."""
        parent = self.parent(node)
        if isinstance(parent, cst.BinaryOperation):
            if isinstance(parent.operator, cst.Add | cst.Subtract):
                return False
            return not (isinstance(parent.operator, cst.Multiply) and parent.left is node)
        return isinstance(parent, cst.UnaryOperation | cst.Attribute | cst.Subscript | cst.Call | cst.Await)


# pypto functions whose arguments may be swapped without changing the value.
_SYMMETRIC = frozenset({
    "add", "mul", "maximum", "minimum", "eq", "ne", "logical_and", "logical_or", "bitwise_and", "bitwise_or",
    "bitwise_xor",
})
# pypto functions whose first argument is legitimately not a tensor.
_FIRST_ARG_EXEMPT = frozenset({
    "tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "loop", "cond", "remainder",
    "assemble", "view", "is_loop_begin", "is_loop_end", "Tensor", "where",
})


class ScalarFirstArg(LintRule):
    CHECK = "lint.scalar_first_arg"
    RULE = "P5.tensor-first-arg"
    MESSAGE = "a pypto function takes the tensor as its first argument"
    VALID = (
        _k("""\
            out.move(pypto.maximum(x, 0.0))
        """),
        _k("""\
            acc = pypto.zeros(N, dtype=pypto.DT_FP32)
            out.move(pypto.add(acc, x))
        """),
        _k("""\
            for i in pypto.loop(2):
                pypto.assemble(pypto.exp(pypto.view(x, [8192], [i * 8192])), [i * 8192], out)
        """),
        # loop bounds and scalar helpers take scalars first
        _k("""\
            for i, unroll in pypto.loop_unroll(0, 2, 1, unroll_list=[1, 2]):
                off = pypto.max(0, i * 8192)
                pypto.assemble(pypto.exp(pypto.view(x, [8192], [off])), [off], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            out.move(pypto.maximum(0.0, x))
        """), line=9, col=14, message="pypto.maximum(x, 0.0)"),
        # not symmetric: the advice keeps the value (127 - t), never a swap
        Invalid(_k("""\
            out.move(pypto.sub(127.0, pypto.exp(x)))
        """), line=9, message="pypto.add(pypto.mul(pypto.exp(x), -1.0), 127.0)"),
        # a library kernel: --strict only
        Invalid(_lib("""\
            out.move(pypto.maximum(0.0, x))
        """), line=9, strict=True),
        Invalid(_k("""\
            eps = 1e-5
            out.move(pypto.minimum(eps, pypto.exp(x)))
        """), line=10),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        name = self.info.pypto_name(node.func)
        if name is None or name in _FIRST_ARG_EXEMPT or name.startswith(("set_", "get_", "is_")):
            return
        pos = positional_args(node)
        if not pos or pos[0].star or self.info.kind_of(pos[0].value, k) is not Kind.SCALAR:
            return
        tensors = [a for a in node.args[1:] if self.info.kind_of(a.value, k) is Kind.TENSOR]
        if not tensors:
            return
        if not self.docs_advice_applies():
            return
        first = _snippet(pos[0].value, 20)
        other = _snippet(tensors[0].value, 20)
        # swapping the arguments is only the same computation for a symmetric operation: pypto.sub(127.0, t)
        # is 127 - t, which `pypto.sub(t, 127.0)` is not (PyPTO's MLA quant)
        if name in _SYMMETRIC:
            instead = f"e.g. `pypto.{name}({other}, {first})`"
        elif name == "sub":
            instead = f"the same value is `pypto.add(pypto.mul({other}, -1.0), {first})`"
        elif name == "div":
            instead = f"the same value is `pypto.mul(pypto.reciprocal({other}), {first})`"
        else:
            instead = f"pypto.{name} is not symmetric: rewrite it with the tensor first, not by swapping"
        self.report(node, f"`pypto.{name}({first}, {other})`: the first argument must be the tensor; {instead}")
