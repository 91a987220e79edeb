"""Property test: the operator fixes keep the value of any expression, exactly.

Random expressions over tensors (x, y), a closure scalar (s) and literals are linted, fixed,
and both versions evaluated with exact rational arithmetic (literals become Fractions,
`pypto.reciprocal(t)` is `1 / t`, `pypto.exp` any fixed function). A misplaced parenthesis in a
rewrite shows up as a different number.
"""

from __future__ import annotations

import textwrap
from fractions import Fraction
from types import SimpleNamespace

import libcst as cst
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pypto_tui.kb import get_kb
from pypto_tui.lint import fix_source, lint_source

KB = get_kb()
_OPS = st.sampled_from(["+", "-", "*", "/"])


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.tuples(children, _OPS, children).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        st.tuples(children, _OPS, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        children.map(lambda c: f"-{c}"),
        children.map(lambda c: f"(-{c})"),
        children.map(lambda c: f"pypto.exp({c})"),
        children.map(lambda c: f"{c} ** 2"),
    )


EXPRS = st.recursive(st.sampled_from(["x", "y", "s", "1.0", "2.5", "0.0", "3", "-1.0"]), _extend, max_leaves=7)


def _module(expr: str) -> str:
    return textwrap.dedent(f"""\
        import pypto

        s = 2.0


        @pypto.frontend.jit
        def kernel(x: pypto.Tensor((64,), pypto.DT_FP32), y: pypto.Tensor((64,), pypto.DT_FP32),
                   out: pypto.Tensor((64,), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(64)
            out.move({expr})
        """)


class _Exact(cst.CSTTransformer):
    """Numbers become Fraction("...") so evaluation is exact."""

    def leave_Float(self, original_node: cst.Float, updated_node: cst.Float) -> cst.BaseExpression:
        return cst.parse_expression(f'F("{updated_node.value}")')

    def leave_Integer(self, original_node: cst.Integer, updated_node: cst.Integer) -> cst.BaseExpression:
        return cst.parse_expression(f'F("{updated_node.value}")')


def _moved_expr(source: str) -> str:
    module = cst.parse_module(source)
    calls = [
        n for n in _walk(module)
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "move"
    ]
    assert len(calls) == 1
    return cst.Module([]).code_for_node(calls[0].args[0].value.visit(_Exact()))


def _walk(node: cst.CSTNode):  # type: ignore[no-untyped-def]
    yield node
    for child in node.children:
        yield from _walk(child)


def _eval(expr: str) -> Fraction:
    fake = SimpleNamespace(exp=lambda t: t * t + 1, reciprocal=lambda t: 1 / t)
    env = {"F": Fraction, "pypto": fake, "x": Fraction(3, 7), "y": Fraction(-5, 2), "s": Fraction(7, 3)}
    return eval(expr, {"__builtins__": {}}, env)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(EXPRS)
def test_fixes_keep_the_value_and_leave_nothing_to_fix(expr: str) -> None:
    source = _module(expr)
    findings = lint_source(source, "k.py", KB)
    assert not [f for f in findings if f.check in ("lint.internal", "lint.parse")]
    try:
        before = _eval(_moved_expr(source))
    except (ZeroDivisionError, OverflowError, ValueError):
        assume(False)
        return
    new, remaining = fix_source(source, KB)
    assert not [f for f in remaining if f.check in ("lint.scalar_left", "lint.unary_minus")], new
    assert _eval(_moved_expr(new)) == before, (expr, new)
    assert fix_source(new, KB)[0] == new
