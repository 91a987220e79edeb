"""Views and reshapes: a view keeps its tensor's rank; a copying reshape needs a constant shape.

`pypto.view(x, shape, offsets, valid_shape=...)` takes a sub-block of the same rank; offsets and
valid_shape may be symbolic, the shape may not (P6.const-view-shape checks that). A reshape that
copies (`inplace=False`, the default) takes plain ints; the ragged part of a block goes in its
valid_shape.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import KernelInfo, Kind, call_arg, positional_args
from pypto_tui.lint.base import Invalid, LintRule
from pypto_tui.lint.rules._examples import RAGGED_ROWS, ROWS, in_kernel


def _k(body: str) -> str:
    return in_kernel(body, ROWS)


def _length(rule: LintRule, expr: cst.BaseExpression | None, node: cst.CSTNode) -> int | None:
    """How many entries a shape-like argument has, when the source says."""
    if expr is None:
        return None
    if isinstance(expr, cst.List | cst.Tuple):
        if any(isinstance(e, cst.StarredElement) for e in expr.elements):
            return None
        return len(expr.elements)
    v = rule.info.values.value(expr, rule.info.scope_of(node))
    return len(v) if isinstance(v, list | tuple) and Ellipsis not in v else None


class ViewRank(LintRule):
    CHECK = "lint.view_rank"
    RULE = "API.view-rank"
    MESSAGE = "a view's shape, offsets and valid_shape have one entry per dimension"
    VALID = (
        in_kernel(RAGGED_ROWS),
        _k("""\
            SHAPE = (32, C)
            top = pypto.view(x, SHAPE, [0, 0])
            pypto.assemble(pypto.exp(top), [0, 0], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(2):
                half = pypto.view(x, [32, C], [i * 32])
                pypto.assemble(pypto.exp(half), [i * 32, 0], out)
        """), line=11, col=16, message="offsets"),
        Invalid(_k("""\
            for i in pypto.loop(3):
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[pypto.min(B, R - i * B)])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, message="valid_shape"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        if self.info.pypto_call(node, "view") is not None:
            shape, offsets = call_arg(node, 1, "shape"), call_arg(node, 2, "offsets")
        elif (isinstance(node.func, cst.Attribute) and node.func.attr.value == "view"
              and self.info.kind_of(node.func.value, k) is Kind.TENSOR):
            shape, offsets = call_arg(node, 0, "shape"), call_arg(node, 1, "offsets")
        else:
            return
        sizes = {"shape": _length(self, shape, node), "offsets": _length(self, offsets, node),
                 "valid_shape": _length(self, call_arg(node, 99, "valid_shape"), node)}
        known = {k2: n for k2, n in sizes.items() if n is not None}
        if len(set(known.values())) <= 1:
            return
        parts = ", ".join(f"{name} has {n}" for name, n in known.items())
        self.report(node, f"pypto.view takes a sub-block of the same rank but {parts} entries: give every one of them "
                          "one entry per dimension (0.2.0 refuses or crashes on a mismatch); a view is not a reshape")


class ReshapeShape(LintRule):
    CHECK = "lint.reshape_shape"
    RULE = "API.reshape-int-shape"
    MESSAGE = "a copying reshape takes a shape of plain ints"
    VALID = (
        _k("""\
            for i in pypto.loop(pypto.ceildiv(R, B)):
                rows = pypto.min(B, R - i * B)
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
                flat = pypto.reshape(chunk, [B * C], valid_shape=[rows * C])
                pypto.set_vec_tile_shapes(4096)
                y = pypto.reshape(pypto.exp(flat), [B, C], valid_shape=[rows, C])
                pypto.set_vec_tile_shapes(8, C)
                pypto.assemble(y, [i * B, 0], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(pypto.ceildiv(R, B)):
                rows = pypto.min(B, R - i * B)
                chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
                flat = pypto.reshape(chunk, [rows * C])
                pypto.set_vec_tile_shapes(4096)
                pypto.assemble(pypto.reshape(pypto.exp(flat), [B, C]), [i * B, 0], out)
        """), line=13, col=16, message="'rows'"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        k = self.kernel_of(node)
        if k is None:
            return
        shape = self._shape_arg(node, k)
        if shape is None:
            return
        inplace = call_arg(node, 99, "inplace")
        if inplace is not None and self.info.const_value(inplace, self.info.scope_of(node)) is not False:
            return  # an inplace reshape relabels the same storage
        why = self.info.symbolic_reason(shape, k)
        if why is None:
            return
        code = cst.Module([]).code_for_node(shape)
        self.report(node, f"reshape to `{code}`, which is not a constant ({why}): a copying reshape takes plain ints "
                          "(0.2.0 refuses it: 'Reshape(): incompatible function arguments'); reshape to the full "
                          "block and give the ragged part as valid_shape=")

    def _shape_arg(self, node: cst.Call, k: KernelInfo) -> cst.BaseExpression | None:
        if self.info.pypto_call(node, "reshape") is not None:
            return call_arg(node, 1, "shape")
        if (isinstance(node.func, cst.Attribute) and node.func.attr.value == "reshape"
                and self.info.kind_of(node.func.value, k) is Kind.TENSOR):
            pos = positional_args(node)
            return pos[0].value if len(pos) == 1 else None
        return None
