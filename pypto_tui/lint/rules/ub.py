"""Unified-buffer bytes per operation: what 0.2.0 refuses with 'exceeds MEM_UB size'.

The compiler adds up the buffers one op holds and refuses more than the chip's unified buffer
(chip.toml `ub_bytes`, 192 KiB). Measured on 0.2.0 (probes in tests/lint/probes/kernels.py):

* a tile counts clipped to the tensor it covers (a (128, 512) tile on a (64, 512) tensor holds
  128 KiB, not 256 KiB);
* an elementwise op whose input dies there works in place: one tile per distinct input
  (`exp(x * 1.0)` on 128 KiB tiles runs);
* when an input is still needed after the op in the same statement, the op holds its inputs and
  its output: two tiles for `exp(x)` in `x + exp(x)`, which fails at 128 KiB (a read in a later
  statement is not counted: how the compiler schedules those is not measured);
* a reduction holds its input tile, about half of it again, and a little more (the pack's
  `reduce_ub_factor` and `reduce_ub_extra_bytes`, the tile calculator's model).

An op is judged only when the tile, its operands' shapes and their dtype are all known: a
guess would report kernels that compile.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import libcst as cst
import libcst.matchers as m

from pypto_tui.kb import KnowledgeBase
from pypto_tui.lint.analysis import KernelInfo, Kind, Shape, children, iter_load_names
from pypto_tui.lint.base import Invalid, LintRule
from pypto_tui.lint.dtypes import dtype_sizes
from pypto_tui.lint.rules._examples import BARE, in_kernel
from pypto_tui.lint.rules.order import _NO_VEC_METHODS, _NO_VEC_TILE
from pypto_tui.lint.rules.tiles import literal_tile
from pypto_tui.shapes import fmt_dims
from pypto_tui.tiles import ub_estimate


def _reduce_need(kb: KnowledgeBase, elems: int, dtype: str, size: int) -> int:
    """Bytes a reduction of `elems` elements holds: the tile calculator's model, for any dtype a
    whole byte wide (the pack prices its own; PyPTO's others by their width)."""
    if dtype in kb.limits.dtype_bytes:
        return ub_estimate(kb, elems, dtype, True)
    return int(elems * size * kb.chip.reduce_ub_factor) + kb.chip.reduce_ub_extra_bytes


_REDUCING = frozenset({"sum", "amax", "amin", "prod", "softmax", "log_softmax", "var", "mean"})

def _k(body: str) -> str:
    return in_kernel(body, BARE)


# fp16 operands, an fp32 result, and a vector epilogue on it (tests/lint/expert/matmul_relu_epilogue.py)
_MM_EPILOGUE = """\
import pypto


@pypto.frontend.jit
def mm(a: pypto.Tensor((128, 256), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16),
       c: pypto.Tensor((128, 512), pypto.DT_FP32)):
    pypto.set_cube_tile_shapes([64, 128], [64, 256], [128, 128])
    pypto.set_vec_tile_shapes({tile})
    c.move(pypto.relu(pypto.matmul(a, b, pypto.DT_FP32)) * 0.5)
"""


class UbEstimate(LintRule):
    CHECK = "lint.ub_estimate"
    RULE = "HW.ub-capacity"
    MESSAGE = "one operation's buffers exceed the unified buffer"
    VALID = (
        # the input dies at the op: it works in place on one 128 KiB tile
        _k("""\
            pypto.set_vec_tile_shapes(64, C)
            out.move(pypto.exp(x * 1.0))
        """),
        # a tile larger than the tensor is clipped to it
        _k("""\
            pypto.set_vec_tile_shapes(128, 1024)
            out.move(pypto.exp(x))
        """),
        # a reduction on a 64 KiB tile
        _k("""\
            pypto.set_vec_tile_shapes(32, C)
            out.move(x - pypto.amax(x, 1, keepdim=True))
        """),
        # the epilogue's tiles are fp32 (the matmul's out_dtype), 128 KiB each
        _MM_EPILOGUE.format(tile="64, 512"),
    )
    INVALID = (
        # the same epilogue on (128, 512) fp32 tiles: 256 KiB
        # (measured: expert/broken/matmul_relu_epilogue__ub_overflow)
        Invalid(_MM_EPILOGUE.format(tile="128, 512"), line=9, col=12, message="fp32 (its input)"),
        Invalid(_k("""\
            pypto.set_vec_tile_shapes(64, C)
            out.move(pypto.exp(x) + x * 0.0)
        """), line=9, col=14, message="2 inputs"),
        Invalid(_k("""\
            pypto.set_vec_tile_shapes(64, C)
            out.move(pypto.exp(x) + pypto.amax(x, 1, keepdim=True))
        """), line=9, col=14, message="`x` is still needed"),
        Invalid(_k("""\
            pypto.set_vec_tile_shapes(64, C)
            s = pypto.sum(x, 1, keepdim=True)
            out.move(x + s)
        """), line=9, col=9, message="reduction"),
    )

    @m.visit(m.FunctionDef())
    def check_function(self, node: cst.FunctionDef) -> None:
        k = self.info.kernels.get(node) or self.info.helpers.get(node)
        if k is None:
            return
        self._reads: dict[str, list[cst.Name]] = {}
        for name in iter_load_names(node.body):
            self._reads.setdefault(name.value, []).append(name)
        self._reported: set[cst.CSTNode] = set()
        self._skipped: set[cst.CSTNode] = getattr(self, "_skipped", set())
        tile: tuple[int, ...] | None = None
        for op in _source_order(node.body):
            if isinstance(op, cst.Call) and self.info.pypto_call(op, "set_vec_tile_shapes") is not None:
                tile = literal_tile(self.info, op)
                continue
            if tile is not None:
                self._judge(op, k, tile)

    def _judge(self, op: cst.CSTNode, k: KernelInfo, tile: tuple[int, ...]) -> None:
        """Report `op` when its buffers overflow (once per statement: the first op the source shows)."""
        stmt = _statement_of(self.info, op)
        kind = self._kind(op, k) if stmt not in self._reported else None
        if kind is None:
            return
        reducing, inputs = kind
        dtype = self._dtype(inputs, k)
        if dtype is None or not inputs:
            return
        size = dtype_sizes(self.ctx.kb.limits.dtype_bytes).get(dtype)
        if size is None:  # int4, hf4, an unpacked fp4: two elements to a byte, or a dtype PyPTO lacks
            if k.node not in self._skipped:
                self._skipped.add(k.node)
                self.report(op, f"dtype {dtype} has no whole byte width (two elements share a byte): the "
                                "unified-buffer check skips this kernel's ops of it", at_most="info")
            return
        cap = self.ctx.kb.chip.ub_bytes
        held: dict[str, int] = {}
        for e in inputs:
            elems = _clipped(tile, self.info.shape_of(e, k))
            if elems is None:
                return
            held[cst.Module([]).code_for_node(e)] = elems
        if reducing:
            need = _reduce_need(self.ctx.kb, max(held.values()), dtype, size)
            if need > cap:
                self._reported.add(stmt)
                self.report(op, f"this reduction holds ~{need} B with tile {fmt_dims(tile)} {dtype} (its input tile "
                                f"and the scratch a reduction needs) > {cap} B of unified buffer: 0.2.0 refuses "
                                "it ('exceeds MEM_UB size'); shrink the tile along the non-reduced axes")
            return
        out_elems = _clipped(tile, self.info.shape_of(op, k))  # type: ignore[arg-type]
        if out_elems is None:
            return
        live = [e for e in inputs if not self._dies(e, op)]
        need = sum(held.values()) * size + (out_elems * size if len(live) == len(inputs) else 0)
        if need <= cap:
            return
        self._reported.add(stmt)
        why = (f"`{cst.Module([]).code_for_node(live[0])}` is still needed after it, so it holds its inputs and its "
               "output" if len(live) == len(inputs) else "its input" if len(held) == 1 else f"its {len(held)} inputs")
        self.report(op, f"this op holds ~{need} B with tile {fmt_dims(tile)} {dtype} ({why}) > {cap} B of unified "
                        "buffer: 0.2.0 refuses it ('exceeds MEM_UB size'); shrink the tile")

    # ------------------------------------------------------------------------------ what an op is
    def _kind(self, op: cst.CSTNode, k: KernelInfo) -> tuple[bool, list[cst.BaseExpression]] | None:
        """(reducing, tensor inputs) of a vector op; None for anything else."""
        info = self.info
        if isinstance(op, cst.BinaryOperation):
            if isinstance(op.operator, cst.MatrixMultiply) or info.kind_of(op, k) is not Kind.TENSOR:
                return None
            return False, [e for e in (op.left, op.right) if info.kind_of(e, k) is Kind.TENSOR]
        if isinstance(op, cst.UnaryOperation) and isinstance(op.operator, cst.Minus):
            return (False, [op.expression]) if info.kind_of(op.expression, k) is Kind.TENSOR else None
        if not isinstance(op, cst.Call):
            return None
        name = info.pypto_name(op.func)
        args = [a.value for a in op.args if a.keyword is None and not a.star]
        if name is None:
            f = op.func
            if not isinstance(f, cst.Attribute) or info.kind_of(f.value, k) is not Kind.TENSOR:
                return None
            name = f.attr.value
            if name in _NO_VEC_METHODS or name in ("reshape", "view"):
                return None
            args = [f.value, *args]
        elif name in _NO_VEC_TILE or name in ("reshape", "cast") or not name[:1].islower() or name.startswith(
            ("set_", "get_")
        ):
            return None
        if info.kind_of(op, k) is not Kind.TENSOR:
            return None
        tensors = [a for a in args if info.kind_of(a, k) is Kind.TENSOR]
        if name in _REDUCING:
            return True, tensors[:1]
        return False, tensors

    def _dtype(self, inputs: list[cst.BaseExpression], k: KernelInfo) -> str | None:
        found = {self.info.dtype_in(e, k) for e in inputs}
        found.discard(None)
        if len(found) == 1:
            return found.pop()
        declared = {t.dtype for t in k.tensor_params.values() if t.dtype is not None}
        return declared.pop() if not found and len(declared) == 1 else None

    # ------------------------------------------------------------------------------ liveness
    def _dies(self, e: cst.BaseExpression, op: cst.CSTNode) -> bool:
        """An input dies at `op` unless it is a name the same statement reads again elsewhere."""
        if not isinstance(e, cst.Name):
            return True
        tree = self.info.tree
        stmt = _statement_of(self.info, op)
        return not any(r is not e and not _within(tree, r, op) and _within(tree, r, stmt)
                       for r in self._reads.get(e.value, ()))


def _source_order(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    if isinstance(node, cst.FunctionDef | cst.ClassDef | cst.Lambda):
        return
    yield node
    for child in children(node):
        yield from _source_order(child)


def _statement_of(info: object, node: cst.CSTNode) -> cst.CSTNode:
    for a in (node, *info.ancestors(node)):  # type: ignore[attr-defined]
        if isinstance(a, cst.BaseSmallStatement | cst.BaseCompoundStatement):
            return a
    return node


def _within(tree: object, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    order, end = tree.order, tree.end  # type: ignore[attr-defined]
    inside: bool = order[b] <= order[a] <= end[b]
    return inside


def _clipped(tile: tuple[int, ...], shape: Shape | None) -> int | None:
    """Elements of `tile` clipped to `shape` (the compiler clips a tile to its tensor)."""
    if shape is None or len(shape) != len(tile) or any(d is None for d in shape):
        return None
    return math.prod(min(t, s) for t, s in zip(tile, shape, strict=True) if s is not None)
