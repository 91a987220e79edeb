"""Loop rules (P6): along the outermost axis, with compile-time view shapes.

A `pypto.loop` index is a symbolic scalar: it may move a view's *offsets* but never its *shape*
(0.2.0 refuses the view). loop_unroll's unroll factor and a Python `range` index are plain ints
in each unrolled copy, so they may size a view. Nested loops compile and verify in 0.2.0 and
PyPTO's own kernels nest them; the documents forbid them, so nesting is reported in strict mode
only. A loop whose index moves an inner axis reads strided chunks (a warning).
"""

from __future__ import annotations

import textwrap

import libcst as cst
import libcst.matchers as m
from libcst.metadata import PositionProvider

from pypto_tui.lint.analysis import (
    KernelInfo,
    Kind,
    call_arg,
    children,
    iter_load_names,
    iter_nodes,
    value_reads,
)
from pypto_tui.lint.base import Invalid, LintRule, example
from pypto_tui.lint.rules._examples import RAGGED_ROWS, in_kernel

_HEAD = """\
import pypto

M, N = 64, 4096
B = 16


@pypto.frontend.jit
def kernel(x: pypto.Tensor((M, N), pypto.DT_FP32), out: pypto.Tensor((M, N), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, 1024)
"""
# Kernel bodies start on line 10.


def _k(body: str) -> str:
    return _HEAD + textwrap.indent(example(body), "    ")


class NestedLoop(LintRule):
    CHECK = "lint.nested_loop"
    RULE = "P6.no-nested-loops"
    MESSAGE = "pypto.loop nested in another pypto.loop"
    VALID = (
        _k("""\
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [B, N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        # a Python range inside a pypto.loop is unrolled at parse time, not a second loop
        _k("""\
            for i in pypto.loop(M // B):
                for j in range(2):
                    chunk = pypto.view(x, [B, N // 2], [i * B, j * (N // 2)])
                    pypto.assemble(pypto.exp(chunk), [i * B, j * (N // 2)], out)
        """),
        # two loops one after the other
        _k("""\
            for i in pypto.loop(2):
                pypto.assemble(pypto.view(x, [32, N], [i * 32, 0]) * 2.0, [i * 32, 0], out)
            for i in pypto.loop(2):
                pypto.assemble(pypto.view(x, [32, N], [i * 32, 0]) * 3.0, [i * 32, 0], out)
        """),
    )
    INVALID = (
        # nesting is the documents' rule only: reported in strict mode (lint.toml [[style]])
        Invalid(_k("""\
            for i in pypto.loop(4):
                for j in pypto.loop(4):
                    chunk = pypto.view(x, [B, 1024], [i * B, j * 1024])
                    pypto.assemble(pypto.exp(chunk), [i * B, j * 1024], out)
        """), line=11, col=9, strict=True),
    )

    @m.visit(m.For())
    def check_for(self, node: cst.For) -> None:
        if not self.info.is_pypto_loop(node):
            return
        outer = self.info.loops_around(node)
        if not outer:
            return
        line = self.get_metadata(PositionProvider, outer[0]).start.line
        self.report(
            node,
            f"pypto.loop nested inside the pypto.loop on line {line}: use one loop along the outermost "
            "axis (scheduling grows with the product of the counts)",
        )


class _LoopRule(LintRule):
    """Shared: names that depend on the index of the pypto.loops around a node."""

    def __init__(self, ctx):  # type: ignore[no-untyped-def]
        super().__init__(ctx)
        self._dep_cache: dict[cst.For, set[str]] = {}

    def dependent_names(self, node: cst.CSTNode) -> tuple[set[str], list[cst.For]]:
        loops = self.info.loops_around(node)
        names: set[str] = set()
        for loop in loops:
            if loop not in self._dep_cache:
                self._dep_cache[loop] = self.info.loop_dependent(loop)
            names |= self._dep_cache[loop]
        return names, loops


_CUBE_CALLS = ("matmul", "scaled_mm", "batch_matmul", "bmm", "conv", "conv2d", "conv3d")


class LoopAxis(_LoopRule):
    CHECK = "lint.loop_axis"
    RULE = "P6.outermost-axis"
    MESSAGE = "the loop index moves an inner axis: loop along the outermost axis"
    VALID = (
        _k("""\
            for i in pypto.loop(M // B):
                off = i * B
                chunk = pypto.view(x, [B, N], [off, 0])
                pypto.assemble(pypto.exp(chunk), [off, 0], out)
        """),
        # a 1-D view has only axis 0
        _k("""\
            flat = pypto.view(x, [M * N], [0])
            for i in pypto.loop(8):
                chunk = pypto.view(flat, [M * N // 8], [i * (M * N // 8)])
                pypto.assemble(pypto.exp(chunk), [i * (M // 8), 0], out)
        """),
        # the axes before the moved one are 1 long: each chunk is contiguous
        _k("""\
            for j in pypto.loop(4):
                row = pypto.view(x, [1, 1024], [0, j * 1024])
                pypto.assemble(pypto.exp(row), [0, j * 1024], out)
        """),
        # constant inner offsets are fine
        _k("""\
            for i in pypto.loop(M // B):
                left = pypto.view(x, [B, N // 2], [i * B, N // 2])
                pypto.assemble(pypto.exp(left), [i * B, N // 2], out)
        """),
        # a transposed [k, m] matmul operand: its M loop moves axis 1 (PyPTO's scaled_mm tests)
        example("""\
            import pypto


            @pypto.frontend.jit
            def mm(a: pypto.Tensor((256, 128), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16),
                   c: pypto.Tensor((128, 512), pypto.DT_FP32)):
                pypto.set_cube_tile_shapes([64, 64], [64, 256], [128, 128])
                for m in pypto.loop(2):
                    a_view = pypto.view(a, [256, 64], [0, m * 64])
                    pypto.assemble(pypto.matmul(a_view, b, pypto.DT_FP32, a_trans=True), [m * 64, 0], c)
            """),
        # a mask window sliding along keys by a computed amount (PyPTO's window attention)
        _k("""\
            for i in pypto.loop(4):
                start = 128 - i * 8
                win = pypto.view(x, [M, 1024], [0, 2048 - start])
                pypto.assemble(pypto.exp(win), [0, i * 1024], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for j in pypto.loop(4):
                chunk = pypto.view(x, [M, 1024], [0, j * 1024])
                pypto.assemble(pypto.exp(chunk), [0, j * 1024], out)
        """), line=11, col=17, message="axis 1"),
        Invalid(_k("""\
            for j in pypto.loop(4):
                col = j * 1024
                chunk = pypto.view(x, [M, 1024], offsets=[0, col])
                pypto.assemble(pypto.exp(chunk), [0, col], out)
        """), line=12),
        # with --strict, the matmul operand and the sliding window as well
        Invalid(_k("""\
            for i in pypto.loop(4):
                start = 128 - i * 8
                win = pypto.view(x, [M, 1024], [0, 2048 - start])
                pypto.assemble(pypto.exp(win), [0, i * 1024], out)
        """), line=12, strict=True),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        if self.info.pypto_call(node, "view") is None:
            return
        offsets = call_arg(node, 2, "offsets")
        if not isinstance(offsets, cst.List | cst.Tuple):
            return
        names, loops = self.dependent_names(node)
        if not loops:
            return
        axes = [
            i for i, el in enumerate(offsets.elements)
            if any(n.value in names for n in iter_load_names(el.value))
        ]
        if not axes or 0 in axes or self._leading_ones(node, min(axes)):
            return
        # In scope: a blocked walk (offset = index x block) over a chunk only vector ops read. A
        # matmul operand's layout decides its axis (a transposed [k, m] operand's M loop moves
        # axis 1), a window sliding by a computed amount (an attention mask along keys) is not a
        # tiling: on PyPTO's code the rule was right 0 times in 7 there, so those are --strict's.
        if not self.ctx.strict and (self._feeds_cube(node) or not all(
                self._blocked(offsets.elements[a].value, names, node) for a in axes)):
            return
        which = ", ".join(str(a) for a in axes)
        fix = "reshape in forward if needed" if self.model_new_module() else "or have the caller pass it transposed"
        self.report(
            node,
            f"the pypto.loop index moves axis {which} of this view, not axis 0: chunks along an inner "
            f"axis are strided; loop along the outermost axis ({fix})",
        )

    def _blocked(self, expr: cst.BaseExpression, names: set[str], at: cst.CSTNode, depth: int = 0) -> bool:
        """`expr` walks in blocks: a loop index, `index * block`, or a local bound once to one."""
        if isinstance(expr, cst.Name):
            if depth < 4:
                _owner, bindings = self.info.lookup(expr.value, self.info.scope_of(at))
                if bindings is not None and len(bindings) == 1 and bindings[0].how == "assign" \
                        and bindings[0].value is not None:
                    return self._blocked(bindings[0].value, names, at, depth + 1)
            return expr.value in names
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply):
            return any(self._blocked(side, names, at, depth + 1) for side in (expr.left, expr.right))
        return False

    def _feeds_cube(self, view: cst.Call) -> bool:
        """The view, or the name it is bound to, is an operand of a matmul-family call."""
        target: str | None = None
        parent = self.info.parent(view)
        if isinstance(parent, cst.Arg):
            call = self.info.parent(parent)
            return isinstance(call, cst.Call) and self.info.pypto_call(call, *_CUBE_CALLS) is not None
        if (isinstance(parent, cst.Assign) and len(parent.targets) == 1
                and isinstance(parent.targets[0].target, cst.Name)):
            target = parent.targets[0].target.value
        if target is None:
            return False
        k = self.info.kernel_of(view)
        if k is None:
            return False
        for n in iter_nodes(k.node.body):
            if (isinstance(n, cst.Call) and self.info.pypto_call(n, *_CUBE_CALLS) is not None
                    and any(isinstance(a.value, cst.Name) and a.value.value == target for a in n.args)):
                return True
        return False

    def _leading_ones(self, view: cst.Call, axis: int) -> bool:
        """Every axis of the view before `axis` is 1 long: the chunk the index moves is contiguous
        (PyPTO's compressor views [1, s1] at [0, pos] of a cache index)."""
        shape = call_arg(view, 1, "shape")
        if not isinstance(shape, cst.List | cst.Tuple) or len(shape.elements) <= axis:
            return False
        return all(self.info.const_value(el.value, self.info.scope_of(view)) == 1 for el in shape.elements[:axis])


class ViewConstant(_LoopRule):
    CHECK = "lint.view_constant"
    RULE = "P6.const-view-shape"
    ALSO_CITES = ("P1.static-shape",)
    MESSAGE = "a view shape must be a compile-time constant"
    VALID = (
        # pypto.min of values the trace knows folds to a constant
        _k("""\
            rows = pypto.min(B, M)
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [rows, N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        _k("""\
            for i in pypto.loop(M // B):
                off = i * B
                chunk = pypto.view(x, [B, N], [off, 0])
                pypto.assemble(pypto.exp(chunk), [off, 0], out)
        """),
        _k("""\
            CHUNK = [B, N]
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, CHUNK, [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        # a main loop plus a constant-shape tail view
        _k("""\
            for i in pypto.loop(3):
                pypto.assemble(pypto.exp(pypto.view(x, [20, N], [i * 20, 0])), [i * 20, 0], out)
            tail = pypto.view(x, [M - 60, N], [60, 0])
            pypto.assemble(pypto.exp(tail), [60, 0], out)
        """),
        # Python range loops are unrolled: their index is a concrete int
        _k("""\
            for j in range(4):
                part = pypto.view(x, [M, (j + 1) * 256], [0, 0])
                pypto.assemble(pypto.exp(part), [0, 0], out)
        """),
        # valid_shape may be dynamic: that is what it is for
        _k("""\
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [B, N], [i * B, 0], valid_shape=[pypto.min(B, M - i * B), N])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        # loop_unroll's factor is a plain int in each unrolled copy
        _k("""\
            for i, n in pypto.loop_unroll(0, M // B, 1, unroll_list=[2, 1]):
                chunk = pypto.view(x, [n * B, N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        # a symbolic scalar of a constant (PyPTO's conv test takes its batch tile so)
        _k("""\
            rows = pypto.symbolic_scalar(B)
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [rows, N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """),
        # a helper returns the shape and the offsets together; only the offsets move with the index
        example("""\
            import pypto

            B, N = 16, 512


            def chunk_of(i):
                return [B, N], [i * B, 0]


            @pypto.frontend.jit
            def kernel(x: pypto.Tensor((64, N), pypto.DT_FP32), out: pypto.Tensor((64, N), pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(B, N)
                for i in pypto.loop(4):
                    shape, offsets = chunk_of(i)
                    pypto.assemble(pypto.exp(pypto.view(x, shape, offsets)), offsets, out)
            """),
        # sizes read from a static annotation, and pypto.ceildiv of constants
        _k("""\
            rows, cols = x.shape
            half = pypto.ceildiv(cols, 2)
            pypto.assemble(pypto.exp(pypto.view(x, [rows, half], [0, 0])), [0, 0], out)
            pypto.assemble(pypto.exp(pypto.view(x, [rows, half], [0, half])), [0, half], out)
        """),
    )
    INVALID = (
        Invalid(_k("""\
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [i * B, N], [0, 0])
                pypto.assemble(pypto.exp(chunk), [0, 0], out)
        """), line=11, col=17, message="loop index 'i'"),
        Invalid(_k("""\
            for i in pypto.loop(5):
                off = i * 13
                rows = min(13, M - off)
                chunk = pypto.view(x, [rows, N], [off, 0])
                pypto.assemble(pypto.exp(chunk), [off, 0], out)
        """), line=13, message="'rows'"),
        Invalid(_k("""\
            n = pypto.amax(x, 1)
            part = pypto.view(x, [n, N], [0, 0])
            pypto.assemble(part, [0, 0], out)
        """), line=11, rule="P1.static-shape", message="'n' is a tensor"),
        Invalid(_k("""\
            for i in pypto.loop(M // B):
                chunk = pypto.view(x, [pypto.min(B, M - i * B), N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, message="loop index 'i'"),
        Invalid(_k("""\
            for i, n in pypto.loop_unroll(0, M // B, 1, unroll_list=[2, 1]):
                chunk = pypto.view(x, [(i + n) * B, N], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, message="loop index 'i'"),
        Invalid(example("""\
            import pypto


            @pypto.frontend.jit
            def kernel(x: pypto.Tensor([pypto.DYNAMIC, 512], pypto.DT_FP32),
                       out: pypto.Tensor([pypto.DYNAMIC, 512], pypto.DT_FP32)):
                pypto.set_vec_tile_shapes(8, 512)
                rows = x.shape[0]
                pypto.assemble(pypto.exp(pypto.view(x, [rows, 512], [0, 0])), [0, 0], out)
            """), line=9, rule="P1.static-shape", message="dynamic axis"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        if self.info.pypto_call(node, "view") is None:
            return
        k = self.kernel_of(node)
        shape = call_arg(node, 1, "shape")
        if k is None or shape is None:
            return
        elements = [e.value for e in shape.elements] if isinstance(shape, cst.List | cst.Tuple) else [shape]
        reasons = [r for r in (self._reason(el, k, set()) for el in elements) if r is not None]
        if not reasons:
            return
        # A shape moved by the loop index is P6's case; any other run-time value breaks P1.
        reason, by_loop = next((r for r in reasons if r[1]), reasons[0])
        code = cst.Module([]).code_for_node(shape)
        if by_loop:
            self.report(node, f"view shape `{code}` is not a compile-time constant: {reason}; keep the shape "
                              "constant and move the index into the offsets (valid_shape takes a ragged tail)")
        else:
            self.report(node, f"view shape `{code}` is not a compile-time constant: {reason}; compute shapes "
                              "in the factory from the static sizes it closes over", rule="P1.static-shape")

    def _item_of_a_helpers_result(self, value: cst.BaseExpression) -> bool:
        """`shape, offsets = helper(i, ...)` binds `shape` to an item of a user function's result:
        the loop index may well go into the offsets only (PyPTO's scaled_mm tests do exactly that),
        and reading every argument as a source of every item called constant shapes run-time ones.
        Severity follows authority: what cannot be traced is not reported."""
        return (isinstance(value, cst.Subscript) and isinstance(value.value, cst.Call)
                and self.info.pypto_name(value.value.func) is None)

    def _reason(self, expr: cst.BaseExpression, k: KernelInfo, seen: set[str]) -> tuple[str, bool] | None:
        """Why `expr` is not a compile-time constant, and whether a pypto.loop index is the cause."""
        other: tuple[str, bool] | None = None
        for n in (r for r in value_reads(expr) if isinstance(r, cst.Name)):
            name = n.value
            if name in seen:
                continue
            seen.add(name)
            if name in k.tensor_params or k.kinds.get(name) is Kind.TENSOR:
                other = other or (f"'{name}' is a tensor", False)
                continue
            owner, bindings = self.info.lookup(name, k.scope)
            if owner is not k.scope or bindings is None:
                continue  # a closure/module constant or a scalar parameter: fixed at compile time
            for b in bindings:
                if self.info.loop_variable(b, name) == "symbolic":
                    return f"it depends on the loop index '{name}'", True
                if b.value is not None and b.how in ("assign", "aug"):
                    if self._item_of_a_helpers_result(b.value):
                        continue  # which argument makes which element is the helper's business
                    inner = self._reason(b.value, k, seen)
                    if inner is None:
                        continue
                    text, by_loop = inner
                    if text.startswith("it depends"):
                        text = f"'{name}' {text[3:]}"
                    else:
                        text = f"'{name}' depends on a run-time value ({text})"
                    if by_loop:
                        return text, True
                    other = other or (text, False)
        if other is not None:
            return other
        for sub in _calls(expr):
            fname = self.info.pypto_name(sub.func)
            if fname in _SCALAR_FOLDS and self.info.symbolic_reason(sub, k) is None and not any(
                    self.info.kind_of(a.value, k) is Kind.TENSOR for a in sub.args):
                continue  # `pypto.min(group, group_tile)` of trace-time ints folds to a constant
            if fname == "symbolic_scalar" and all(isinstance(self.info.const_value(a.value, k.scope), int)
                                                  for a in sub.args):
                continue  # measured: 0.2.0 takes a view of shape [pypto.symbolic_scalar(16), 512] and verifies it
            if fname is not None and not isinstance(self.info.const_value(sub, k.scope), int):
                return f"`pypto.{fname}(...)` is computed when the kernel runs", False
        dynamic = self.info.symbolic_reason(expr, k)
        if dynamic is not None and "dynamic axis" in dynamic:
            return dynamic, False
        return None


class LoopTail(LintRule):
    CHECK = "lint.loop_tail"
    RULE = "P6.loop-tail"
    MESSAGE = "a loop whose blocks do not cover the axis, or run past it, without a valid_shape"
    VALID = (
        in_kernel("""\
            for i in pypto.loop(R // 16):
                chunk = pypto.view(x, [16, C], [i * 16, 0])
                pypto.assemble(pypto.exp(chunk), [i * 16, 0], out)
        """),
        # the ragged last block is handled with a valid_shape
        in_kernel(RAGGED_ROWS),
        # unrolled over blocks of 16 that tile the 64 rows
        in_kernel("""\
            for i, n in pypto.loop_unroll(0, R // 16, 1, unroll_list=[4, 1]):
                chunk = pypto.view(x, [n * 16, C], [i * 16, 0])
                pypto.assemble(pypto.exp(chunk), [i * 16, 0], out)
        """),
        # a dynamic row count: nothing to compare
        in_kernel("""\
            for i in pypto.loop(x.shape[0] // B):
                pypto.assemble(pypto.exp(pypto.view(x, [B, C], [i * B, 0])), [i * B, 0], out)
        """).replace("pypto.Tensor((R, C), pypto.DT_FP32), out",
                     "pypto.Tensor((pypto.DYNAMIC, C), pypto.DT_FP32), out"),
    )
    INVALID = (
        # 64 rows in blocks of 24: R // B = 2 loops compute 48 rows and leave 16 untouched
        Invalid(in_kernel("""\
            for i in pypto.loop(R // B):
                chunk = pypto.view(x, [B, C], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, col=17, message="the last 16"),
        # three blocks of 24 over 64 rows: the last view reads 8 rows past the end
        Invalid(in_kernel("""\
            for i in pypto.loop(3):
                chunk = pypto.view(x, [B, C], [B * i, 0])
                pypto.assemble(pypto.exp(chunk), [B * i, 0], out)
        """), line=11, message="8 past the end"),
        # unrolled by 2 and 1: R // B = 2 blocks of 24 again, each trip's view n blocks long
        Invalid(in_kernel("""\
            for i, n in pypto.loop_unroll(0, R // B, 1, unroll_list=[2, 1]):
                chunk = pypto.view(x, [n * B, C], [i * B, 0])
                pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
        """), line=11, message="the last 16"),
    )

    @m.visit(m.For())
    def check_loop(self, node: cst.For) -> None:
        if not self.info.is_pypto_loop(node):
            return
        names = self._targets(node)
        k = self.kernel_of(node)
        count = self._count(node)
        if k is None or count is None or names is None:
            return
        index, factor = names
        for view in iter_nodes(node.body):
            if not isinstance(view, cst.Call) or self.info.pypto_call(view, "view") is None or call_arg(
                    view, 99, "valid_shape") is not None:
                continue
            found = self._axis(view, index, factor, k)
            if found is None:
                continue
            axis, block, size = found
            covered = count * block
            if covered < size:
                self.report(view, f"{count} iterations of {block} cover {covered} of the {size} entries of axis "
                                  f"{axis}: the last {size - covered} are never computed; loop ceil_div({size}, "
                                  f"{block}) times with a valid_shape for the tail, or pick a block that divides "
                                  f"{size}")
                return
            if covered > size:
                self.report(view, f"{count} iterations of {block} over the {size} entries of axis {axis}: the last "
                                  f"view reads {covered - size} past the end; give it valid_shape="
                                  f"[pypto.min({block}, {size} - {index} * {block}), ...] or pick a block that "
                                  f"divides {size}")
                return

    @staticmethod
    def _targets(loop: cst.For) -> tuple[str, str | None] | None:
        """(index, unroll factor) of `for i in pypto.loop(...)` or `for i, n in pypto.loop_unroll(...)`:
        an unrolled loop's index still counts single blocks, and its views are `n` blocks long."""
        if isinstance(loop.target, cst.Name):
            return loop.target.value, None
        if isinstance(loop.target, cst.Tuple) and len(loop.target.elements) == 2 and all(
                isinstance(e.value, cst.Name) for e in loop.target.elements):
            first, second = (e.value for e in loop.target.elements)
            return first.value, second.value  # type: ignore[attr-defined]
        return None

    def _count(self, loop: cst.For) -> int | None:
        """The iteration count of `pypto.loop(n)` / `pypto.loop(0, n[, 1])` (and of `loop_unroll`, in
        blocks) when it is a constant."""
        call: cst.Call = loop.iter  # type: ignore[assignment]
        pos = [a.value for a in call.args if a.keyword is None and not a.star]
        scope = self.info.scope_of(loop)
        vals = [self.info.const_value(p, scope) for p in pos]
        if len(vals) == 1:
            n = vals[0]
        elif len(vals) in (2, 3) and vals[0] == 0 and (len(vals) == 2 or vals[2] == 1):
            n = vals[1]
        else:
            return None
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None

    def _axis(self, view: cst.Call, index: str, factor: str | None,
              k: KernelInfo) -> tuple[int, int, int] | None:
        """(axis, block, axis size) for a view whose offset on one axis is `index * block` and whose
        shape there is `block` (or `factor * block` in an unrolled loop), on a source whose size
        there is known."""
        src, shape_e, offs_e = call_arg(view, 0, "input"), call_arg(view, 1, "shape"), call_arg(view, 2, "offsets")
        if src is None or not isinstance(offs_e, cst.List | cst.Tuple) or not isinstance(shape_e, cst.List | cst.Tuple):
            return None
        src_shape = self.info.shape_of(src, k)
        if src_shape is None or len(shape_e.elements) != len(src_shape) or len(offs_e.elements) != len(src_shape):
            return None
        for axis, el in enumerate(offs_e.elements):
            block_e = self._times(self._once(el.value, k), index)
            block = self.info.const_value(block_e, k.scope) if block_e is not None else None
            size = src_shape[axis]
            if not isinstance(block, int) or isinstance(block, bool) or block <= 0 or not isinstance(size, int):
                continue
            extent = shape_e.elements[axis].value
            if factor is not None and self._times(extent, factor) is not None:
                extent = self._times(extent, factor)  # type: ignore[assignment]
            if self.info.const_value(extent, k.scope) == block:
                return axis, block, size
        return None

    def _once(self, expr: cst.BaseExpression, k: KernelInfo) -> cst.BaseExpression:
        """A local bound once in the kernel (`b_offset = idx * tile_b`, PyPTO's examples) as its value."""
        if isinstance(expr, cst.Name):
            owner, bindings = self.info.lookup(expr.value, k.scope)
            if owner is k.scope and bindings is not None and len(bindings) == 1 and bindings[0].how == "assign" \
                    and bindings[0].value is not None:
                return bindings[0].value
        return expr

    @staticmethod
    def _times(expr: cst.BaseExpression, name: str) -> cst.BaseExpression | None:
        """`other` when `expr` is `name * other` or `other * name`."""
        if not isinstance(expr, cst.BinaryOperation) or not isinstance(expr.operator, cst.Multiply):
            return None
        sides = (expr.left, expr.right)
        other = [s for s in sides if not (isinstance(s, cst.Name) and s.value == name)]
        return other[0] if len(other) == 1 else None


# pypto's scalar helpers: on values the trace knows they fold to a constant
_SCALAR_FOLDS = frozenset({"min", "max", "ceildiv", "ceil_div"})


def _calls(expr: cst.CSTNode):  # type: ignore[no-untyped-def]
    if isinstance(expr, cst.Call):
        yield expr
    for child in children(expr):
        yield from _calls(child)
