"""Tiles before operations: the first vector op needs a vec tile set, the first matmul a cube tile.

Tile shapes are global state the tracer reads when it records an operation, so what counts is the
order in which the kernel runs: the kernel body top to bottom, stepping into every helper it calls
at the point of the call (a helper may set the tile for the kernel, as layered kernels do). A view
does not need a tile, nor does a reshape of a kernel's whole tensor parameter (probe
reshape_param_before_tiles); an arithmetic op, a reduction and a copying reshape of anything else
(a view: probe reshape_view_before_tiles) do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst
import libcst.matchers as m

from pypto_tui.lint.analysis import KernelInfo, Kind, ModuleInfo, call_arg, children
from pypto_tui.lint.base import Invalid, LintRule, example
from pypto_tui.lint.rules._examples import BARE, in_kernel

# pypto calls that record no vector work (or whose need for a tile is not measured): silent.
_NO_VEC_TILE = frozenset({
    "view", "assemble", "zeros", "ones", "full", "tensor", "empty", "arange", "from_torch", "Tensor", "matmul",
    "loop", "loop_unroll", "cond", "is_loop_begin", "is_loop_end", "min", "max", "ceildiv", "ceil_div",
})
_NO_VEC_METHODS = frozenset({"view", "assemble", "move", "dim", "size", "numel", "shape", "dtype"})
# pypto calls that run on the cube (they need the cube tiles, never the vec tile).
CUBE_OPS = frozenset({"matmul", "scaled_mm", "batch_matmul", "bmm"})
# convolutions take their own tiles (set_conv_tile_shapes): neither the vec nor the matmul cube tiles
_OWN_TILES = frozenset({"conv", "conv2d", "conv3d"})
MAX_DEPTH = 8

def _k(body: str) -> str:
    return in_kernel(body, BARE)


@dataclass
class _State:
    vec: bool = False
    cube: bool = False
    vec_reported: bool = False
    cube_reported: bool = False


class TileOrder(LintRule):
    CHECK = "lint.tile_order"
    RULE = "API.tiles-before-ops"
    MESSAGE = "set the tile before the first operation that needs it"
    VALID = (
        _k("""\
            pypto.set_vec_tile_shapes(16, C)
            out.move(pypto.exp(x))
        """),
        # a tensor's setting and an element read need no tile
        _k("""\
            x.set_cache_policy(pypto.CachePolicy.NONE_CACHEABLE, True)
            first = x[0, 0]
            pypto.set_vec_tile_shapes(16, C)
            out.move(pypto.exp(x))
        """),
        # a view needs no tile
        _k("""\
            top = pypto.view(x, [R, C], [0, 0])
            pypto.set_vec_tile_shapes(16, C)
            out.move(pypto.exp(top))
        """),
        # a reshape of the kernel's whole input traces without a tile (probe reshape_param_before_tiles)
        _k("""\
            flat = pypto.reshape(x, [R * C])
            pypto.set_vec_tile_shapes(8192)
            out.move(pypto.reshape(pypto.exp(flat), [R, C]))
        """),
        # the helper the kernel calls first sets the tile for it
        "import pypto\n\nR, C = 64, 512\n\n\ndef setup():\n    pypto.set_vec_tile_shapes(16, C)\n\n\n"
        "@pypto.frontend.jit\ndef kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), "
        "pypto.DT_FP32)):\n    setup()\n    out.move(pypto.exp(x))\n",
    )
    INVALID = (
        Invalid(_k("""\
            y = pypto.exp(x)
            pypto.set_vec_tile_shapes(16, C)
            out.move(y)
        """), line=8, col=9, message="set_vec_tile_shapes"),
        Invalid("import pypto\n\nR, C = 64, 512\n\n\ndef rows(block):\n    s = pypto.sum(block, 1, keepdim=True)\n"
                "    pypto.set_vec_tile_shapes(16, C)\n    return block * 0.0 + s\n\n\n@pypto.frontend.jit\n"
                "def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):\n"
                "    out.move(rows(x))\n", line=7, col=9, message="jit kernel `kernel`"),
        Invalid(_k("""\
            for i in pypto.loop(4):
                flat = pypto.reshape(pypto.view(x, [16, C], [i * 16, 0]), [16 * C])
                pypto.set_vec_tile_shapes(8192)
                pypto.assemble(pypto.reshape(flat * 2.0, [16, C]), [i * 16, 0], out)
        """), line=9, col=16, message="reshape"),
        Invalid(example("""\
            import pypto


            @pypto.frontend.jit
            def mm(a: pypto.Tensor((128, 256), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16),
                   c: pypto.Tensor((128, 512), pypto.DT_FP32)):
                c.move(pypto.matmul(a, b, pypto.DT_FP32))
            """), line=7, col=12, message="set_cube_tile_shapes"),
    )

    @m.visit(m.FunctionDef())
    def check_kernel(self, node: cst.FunctionDef) -> None:
        k = self.info.kernels.get(node)
        if k is None:
            return
        state = _State()
        for op, need in self._ops(node.body, k, (node,)):
            if need == "set_vec":
                state.vec = True
            elif need == "set_cube":
                state.cube = True
            elif need == "vec" and not state.vec and not state.vec_reported:
                state.vec_reported = True
                said = ("'TileShape dim num should same to input' (probe transpose_before_tiles)"
                        if _is_transpose(self.info, op) else "F21004 'tile shape not set' (probe op_before_tiles)")
                self.report(op, f"`{_head(op)}` runs before any pypto.set_vec_tile_shapes(...) in jit kernel "
                                f"`{k.name}`: 0.2.0 stops with {said}; set the vec tile first")
            elif need == "cube" and not state.cube and not state.cube_reported:
                state.cube_reported = True
                self.report(op, f"`{_head(op)}` runs before any pypto.set_cube_tile_shapes(m, k, n) in jit kernel "
                                f"`{k.name}`: 0.2.0 stops with FC4000 'Invalid tile values'; set the cube tiles first")

    def _ops(self, node: cst.CSTNode, k: KernelInfo, stack: tuple[cst.FunctionDef, ...]
             ) -> Iterator[tuple[cst.CSTNode, str]]:
        """(node, what) in the order the kernel runs: tile settings, ops needing a tile, helper bodies."""
        if isinstance(node, cst.FunctionDef | cst.ClassDef | cst.Lambda):
            return
        for child in children(node):  # operands are computed before the op that uses them
            yield from self._ops(child, k, stack)
        fn = self.info.called_function(node)
        helper = self.info.helpers.get(fn) if fn is not None else None
        if helper is not None and fn not in stack and len(stack) < MAX_DEPTH:
            yield from self._ops(helper.node.body, helper, (*stack, helper.node))
        need = self._need(node, k)
        if need is not None:
            yield node, need

    def _need(self, node: cst.CSTNode, k: KernelInfo) -> str | None:
        return tile_need(self.info, node, k)


def tile_need(info: ModuleInfo, node: cst.CSTNode, k: KernelInfo) -> str | None:
    """What `node` asks of the tile state: "set_vec" / "set_cube" (it sets one), "vec" / "cube" (it
    records an op that needs one), None (nothing)."""
    if isinstance(node, cst.Call):
        name = info.pypto_name(node.func)
        if name == "set_vec_tile_shapes":
            return "set_vec"
        if name == "set_cube_tile_shapes":
            return "set_cube"
        if name in CUBE_OPS:
            return "cube"
        if name in _OWN_TILES:
            return None
        if name is not None:
            last = name.rsplit(".", 1)[-1]
            if (name in _NO_VEC_TILE or not last[:1].islower() or "." in name
                    or last.startswith(("set_", "get_", "is_"))):
                return None  # configuration, a type, or a namespace's call (distributed., experimental.)
            if name == "reshape" and (_inplace(node) or _of_param(call_arg(node, 0, "input"), k)):
                return None
            return "vec" if info.kind_of(node, k) is Kind.TENSOR else None
        f = node.func
        if isinstance(f, cst.Attribute) and info.kind_of(f.value, k) is Kind.TENSOR:
            if (f.attr.value in _NO_VEC_METHODS or f.attr.value.startswith(("set_", "get_", "is_"))
                    or (f.attr.value == "reshape" and (_inplace(node) or _of_param(f.value, k)))):
                return None  # a view, a move, or a setting (`w.set_cache_policy(...)`)
            return "vec" if info.kind_of(node, k) is Kind.TENSOR else None
        return None
    if isinstance(node, cst.BinaryOperation) and info.kind_of(node, k) is Kind.TENSOR:
        return "cube" if isinstance(node.operator, cst.MatrixMultiply) else "vec"
    if (isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus)
            and info.kind_of(node, k) is Kind.TENSOR):
        return "vec"
    return None


def _of_param(src: cst.BaseExpression | None, k: KernelInfo) -> bool:
    """A reshape of a jit kernel's whole tensor parameter: 0.2.0 traces it without a tile (probe
    reshape_param_before_tiles verifies); a reshape of a view of one stops with F21004 (probe
    reshape_view_before_tiles)."""
    return isinstance(src, cst.Name) and src.value in k.tensor_params and not k.is_helper


def _is_transpose(info: ModuleInfo, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    f = node.func
    return info.pypto_call(node, "transpose") is not None or (isinstance(f, cst.Attribute)
                                                                and f.attr.value == "transpose")


def _inplace(call: cst.Call) -> bool:
    flag = call_arg(call, 99, "inplace")
    return isinstance(flag, cst.Name) and flag.value == "True"


def _head(node: cst.CSTNode) -> str:
    code = cst.Module([]).code_for_node(node).replace("\n", " ")
    if isinstance(node, cst.Call):
        fn = cst.Module([]).code_for_node(node.func)
        return f"{fn}(...)"
    return code if len(code) <= 40 else code[:37] + "..."
