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
from pypto_tui.lint.analysis import KernelInfo, call_arg
from pypto_tui.lint.base import Invalid, LintRule, example
from pypto_tui.tiles import evaluate_cube


def _mm(tiles: str) -> str:
    return example(f"""\
        import pypto


        @pypto.frontend.jit
        def mm(a: pypto.Tensor((128, 256), pypto.DT_FP16), b: pypto.Tensor((256, 512), pypto.DT_FP16),
               c: pypto.Tensor((128, 512), pypto.DT_FP32)):
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
    )
    INVALID = (
        Invalid(_mm("[64, 96], [64, 256], [128, 128]"), line=7, col=5, message="mL0=64, mL1=96"),
        Invalid(_mm("[64, 128], [40, 80], [128, 128]"), line=7, message="kL0=40"),
        Invalid(_mm("[64], [64, 256], [128, 128]"), line=7, message="[L0, L1]"),
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
        for f in ev.findings:
            if f.rule == self.RULE and f.level == "error":
                self.report(node, f"cube tiles m={list(tm)}, k={list(tk)}, n={list(tn)}: {f.message}")

    def _dtype(self, k: KernelInfo) -> str:
        """The matmul inputs' declared dtype; with none declared, the pack's smallest (so a buffer
        size is only reported when it overflows whatever the data is)."""
        sizes = self.ctx.kb.limits.dtype_bytes
        declared = {t.dtype for t in k.tensor_params.values()
                    if t.dtype is not None and t.dtype in sizes and (t.rank or 0) >= 2}
        pool = declared or set(sizes)
        return min(pool, key=lambda d: (sizes[d], d))
