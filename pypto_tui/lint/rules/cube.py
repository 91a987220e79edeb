"""Cube tiles as the compiler checks them: `set_cube_tile_shapes(m, k, n)` with [L0, L1] pairs.

m and n take [L0, L1], k takes [L0, L1] or [L0, L1a, L1b]; L0 <= L1, L1 a multiple of L0, kL0 and
nL0 multiples of 16 elements, and the L0/L1 buffers within the chip's sizes. The relations and
sizes are the tile calculator's (`tiles.evaluate_cube`); this rule only finds the literal tiles
in a kernel and the dtype the kernel declares for its matmul inputs.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from pypto_tui.errors import InputError
from pypto_tui.lint.analysis import KernelInfo, call_arg, iter_nodes
from pypto_tui.lint.base import Invalid, LintRule, example
from pypto_tui.tiles import evaluate_cube


def _mm(tiles: str, n: int = 512, dtype: str = "DT_FP16") -> str:
    return example(f"""\
        import pypto


        @pypto.frontend.jit
        def mm(a: pypto.Tensor((128, 256), pypto.{dtype}), b: pypto.Tensor((256, {n}), pypto.{dtype}),
               c: pypto.Tensor((128, {n}), pypto.DT_FP32)):
            pypto.set_cube_tile_shapes({tiles})
            c.move(pypto.matmul(a, b, pypto.DT_FP32))
        """)


class CubeTiles(LintRule):
    CHECK = "lint.cube_tiles"
    RULE = "B.matmul-cube-tiles"
    MESSAGE = "cube tiles the compiler refuses"
    VALID = (
        _mm("[64, 128], [64, 256], [128, 128]"),
        _mm("[64, 64], [64, 128, 256], [128, 128]"),
        _mm("m=[128, 128], k=[32, 128], n=[256, 256]"),
        # tiles the kernel receives from its factory are not judged
        "import pypto\n\n\ndef make(tm):\n    @pypto.frontend.jit\n    def mm(a: pypto.Tensor((64, 64), "
        "pypto.DT_FP16), c: pypto.Tensor((64, 64), pypto.DT_FP32)):\n        pypto.set_cube_tile_shapes(tm, [32, 64], "
        "[64, 64])\n        c.move(pypto.matmul(a, a, pypto.DT_FP32))\n\n    return mm\n",
        # n = 24: the compiler clips nL0 = 128 to the operand, so L0B holds 512 x 32 fp32 (64 KiB)
        _mm("[16, 16], [512, 1024], [128, 128]", n=24, dtype="DT_FP32"),
        # no matmul whose operands the source states: the buffers are not judged
        _mm("[16, 16], [256, 256], [256, 256]").replace("pypto.Tensor((256, 512), pypto.DT_FP16)", "pypto.Tensor()"),
    )
    INVALID = (
        Invalid(_mm("[64, 96], [64, 256], [128, 128]"), line=7, col=5, message="mL0=64, mL1=96"),
        Invalid(_mm("[64, 128], [40, 80], [128, 128]"), line=7, message="kL0=40"),
        Invalid(_mm("[64], [64, 256], [128, 128]"), line=7, message="[L0, L1]"),
        # the same tiles on fp32 operands hold twice the bytes: the dtype is the tensors', not assumed
        Invalid(_mm("[16, 16], [256, 256], [256, 256]", dtype="DT_FP32"), line=7, message="fp32 operands"),
        Invalid(_mm("[16, 16], [512, 1024], [128, 128]", n=512, dtype="DT_FP32"), line=7,
                message="(clipped to the operands: m=[16, 16], k=[256, 256], n=[128, 128])"),
    )

    @m.visit(m.Call())
    def check_call(self, node: cst.Call) -> None:
        if self.info.pypto_call(node, "set_cube_tile_shapes") is None:
            return
        k = self.kernel_of(node)
        if k is None:
            return
        scope = self.info.scope_of(node)
        tiles: list[tuple[int, ...]] = []
        for e in (call_arg(node, 0, "m"), call_arg(node, 1, "k"), call_arg(node, 2, "n")):
            v = self.info.const_value(e, scope) if e is not None else None
            if not isinstance(v, tuple) or not all(isinstance(d, int) and not isinstance(d, bool) for d in v):
                return  # not all literal: nothing to judge
            tiles.append(v)
        tm, tk, tn = tiles
        if len(tm) != 2 or len(tn) != 2 or len(tk) not in (2, 3):
            self.report(node, f"set_cube_tile_shapes takes m=[L0, L1], k=[L0, L1] or [L0, L1a, L1b] and n=[L0, L1]; "
                              f"got m={list(tm)}, k={list(tk)}, n={list(tn)}")
            return
        try:
            ev = evaluate_cube(self.ctx.kb, max(tm), max(tk), max(tn), self._dtype(k), tm, tk, tn)
        except InputError as exc:
            self.report(node, f"{exc}")
            return
        said = set()
        for f in ev.findings:  # the relations between L0 and L1, on the tiles as written
            if f.rule == self.RULE and f.level == "error" and not _is_capacity(f.message):
                said.add(f.message)
                self.report(node, f"cube tiles m={list(tm)}, k={list(tk)}, n={list(tn)}: {f.message}")
        # the buffers, on the tiles the compiler clips to each matmul's operands
        for mkn, dtype in self._matmuls(k):
            cm, ck, cn = (_clip(t, d, self.ctx.kb.chip.cube_align_elements) for t, d in zip((tm, tk, tn), mkn,
                                                                                          strict=True))
            clipped = evaluate_cube(self.ctx.kb, *mkn, dtype, cm, ck, cn)
            for f in clipped.findings:
                if f.rule == self.RULE and f.level == "error" and _is_capacity(f.message) and f.message not in said:
                    said.add(f.message)
                    how = "" if (cm, ck, cn) == (tm, tk, tn) else f" (clipped to the operands: m={list(cm)}, " \
                        f"k={list(ck)}, n={list(cn)})"
                    self.report(node, f"cube tiles m={list(tm)}, k={list(tk)}, n={list(tn)}{how} on {dtype} "
                                      f"operands (M, K, N) = {mkn}: {f.message}")

    def _matmuls(self, k: KernelInfo) -> list[tuple[tuple[int, int, int], str]]:
        """(M, K, N) and the input dtype of each matmul of the kernel whose operand shapes and dtype
        the source states; a matmul with unknown operands is not judged (its tiles may be clipped)."""
        out = []
        for n in iter_nodes(k.node.body):
            if self.info.pypto_call(n, "matmul") is None:
                continue
            call: cst.Call = n  # type: ignore[assignment]
            a_e, b_e = call_arg(call, 0, "input"), call_arg(call, 1, "mat2")
            if a_e is None or b_e is None:
                continue
            a, b = self.info.shape_of(a_e, k), self.info.shape_of(b_e, k)
            dtype = self.info.dtype_in(a_e, k)
            if a is None or b is None or len(a) < 2 or len(b) < 2 or dtype not in self.ctx.kb.limits.dtype_bytes:
                continue
            a_t = self.info.const_value(call_arg(call, 99, "a_trans") or cst.Name("False"), k.scope)
            b_t = self.info.const_value(call_arg(call, 99, "b_trans") or cst.Name("False"), k.scope)
            rows, red = (a[-1], a[-2]) if a_t else (a[-2], a[-1])
            cols = b[-2] if b_t else b[-1]
            if rows is None or red is None or cols is None or dtype is None:
                continue
            out.append(((rows, red, cols), dtype))
        return out

    def _dtype(self, k: KernelInfo) -> str:
        """The matmul inputs' declared dtype; with none declared, the pack's smallest (so a buffer
        size is only reported when it overflows whatever the data is)."""
        sizes = self.ctx.kb.limits.dtype_bytes
        declared = {t.dtype for t in k.tensor_params.values()
                    if t.dtype is not None and t.dtype in sizes and (t.rank or 0) >= 2}
        pool = declared or set(sizes)
        return min(pool, key=lambda d: (sizes[d], d))


def _is_capacity(message: str) -> bool:
    """A buffer-size finding of `evaluate_cube` (as opposed to an L0/L1 relation)."""
    return " needs " in message


def _clip(tile: tuple[int, ...], dim: int, align: int) -> tuple[int, ...]:
    """A cube tile entry as the compiler uses it on an axis of `dim` elements: no larger than the
    axis rounded up to the cube's alignment."""
    cap = -(-dim // align) * align
    return tuple(min(t, cap) for t in tile)
