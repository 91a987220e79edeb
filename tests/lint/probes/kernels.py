"""Compiler probes: the measurements behind the lint's severities.

Each probe is one small kernel module computing out = exp(x) on a (64, 512) fp32 input (the
baseline is `exp_task.py`), written in one way whose verdict a lint rule depends on: does
pypto 0.2.0 refuse it, run it wrongly, or run it correctly? `test_compiler_probes.py` runs
them through the real compiler (marker `sim`) and checks the verdicts the knowledge pack cites
(`knowledge/default/lint.toml` names the probe behind each one).

`probe_source(name)` returns the module; `PROBES[name]` is (decorator, body, expected), where
expected is "ok" (verifies against the baseline) or "STATUS: FRAGMENT", the sim status the
worker reports (compile_error, error when the module cannot even be imported, crashed when the
compiler dies; "A|B" when runs have given either) and a fragment of the compiler's own message.
"""

from __future__ import annotations

import textwrap

_MODULE = '''\
import pypto
import torch

R, C = 64, 512
B = 24


{decorator}
def kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
{body}


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        kernel(x.contiguous(), out)
        return out
'''

JIT = "@pypto.frontend.jit"

PROBES: dict[str, tuple[str, str, str]] = {
    "plain": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """, "ok"),
    # P2.no-kernel-reshape: a reshape inside the kernel, there and back
    "reshape_in_kernel": (JIT, """
        pypto.set_vec_tile_shapes(8192)
        flat = pypto.reshape(x, [R * C])
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.reshape(pypto.exp(flat), [R, C]))
    """, "ok"),
    # P6.no-nested-loops: 2 x 2 blocks
    "nested_loops": (JIT, """
        pypto.set_vec_tile_shapes(16, 256)
        for i in pypto.loop(2):
            for j in pypto.loop(2):
                block = pypto.view(x, [32, 256], [i * 32, j * 256])
                pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
    """, "ok"),
    # P5.tensor-left, P5.no-unary-minus, P5.tensor-first-arg: the scalar-first forms
    "scalar_left": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp((0.0 - x) * -1.0))
    """, "ok"),
    "unary_minus": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(-(-x)))
    """, "ok"),
    "scalar_first_arg": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(pypto.maximum(-1.0e30, x)))
    """, "ok"),
    # V020.builtin-minmax: builtin min() of a loop index (the ragged last chunk of 64 rows by 24)
    "builtin_min_symbolic": (JIT, """
        pypto.set_vec_tile_shapes(8, 512)
        for i in pypto.loop(3):
            rows = min(B, R - i * B)
            chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
            pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
    """, "compile_error: Not concrete value"),
    "pypto_min_symbolic": (JIT, """
        pypto.set_vec_tile_shapes(8, 512)
        for i in pypto.loop(3):
            rows = pypto.min(B, R - i * B)
            chunk = pypto.view(x, [B, C], [i * B, 0], valid_shape=[rows, C])
            pypto.assemble(pypto.exp(chunk), [i * B, 0], out)
    """, "ok"),
    # API.kernel-loops: while, and a for over a list (unrolled at trace time)
    "while_loop": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        k = 0
        while k < 1:
            out.move(pypto.exp(x))
            k = k + 1
    """, "compile_error: While is not supported"),
    "for_over_list": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        for off in [0, 32]:
            pypto.assemble(pypto.exp(pypto.view(x, [32, C], [off, 0])), [off, 0], out)
    """, "ok"),
    # API.view-rank: a 2-D view shape with 1-D offsets
    "view_rank_mismatch": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2):
            half = pypto.view(x, [32, C], [i * 32])
            pypto.assemble(pypto.exp(half), [i * 32, 0], out)
    """, "compile_error|crashed: "),
    # API.tiles-before-ops: the first vector op before the tile is set, and a view before it
    "op_before_tiles": (JIT, """
        y = pypto.exp(x)
        pypto.set_vec_tile_shapes(16, 512)
        out.move(y)
    """, "compile_error: tile shape not set"),
    "view_before_tiles": (JIT, """
        top = pypto.view(x, [R, C], [0, 0])
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(top))
    """, "ok"),
    # API.tiles-before-ops: a reshape of the whole input needs no tile; a reshape of a view does
    "reshape_param_before_tiles": (JIT, """
        flat = pypto.reshape(x, [R * C])
        pypto.set_vec_tile_shapes(8192)
        y = pypto.exp(flat)
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.reshape(y, [R, C]))
    """, "ok"),
    "reshape_view_before_tiles": (JIT, """
        for i in pypto.loop(2):
            block = pypto.view(x, [32, C], [i * 32, 0])
            flat = pypto.reshape(block, [32 * C])
            pypto.set_vec_tile_shapes(8192)
            y = pypto.exp(flat)
            pypto.set_vec_tile_shapes(16, 512)
            pypto.assemble(pypto.reshape(y, [32, C]), [i * 32, 0], out)
    """, "compile_error: tile shape not set"),
    # API.one-jit-decorator and the 0.2.0 jit keywords
    "double_jit": (JIT + "\n" + JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """, "error: jit decorator can only be used on functions"),
    "jit_new_ir": ("@pypto.frontend.jit(new_ir=True)", """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """, "error: unexpected keyword argument 'new_ir'"),
    "jit_use_cache": ("@pypto.frontend.jit(use_cache=False)", """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """, "ok"),
    "pypto_jit_alias": ("@pypto.jit", """
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x))
    """, "error: has no attribute 'jit'"),
    # parallel= on pypto.loop: accepted by 0.2.0 (and ignored)
    "loop_parallel": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2, parallel=True):
            pypto.assemble(pypto.exp(pypto.view(x, [32, C], [i * 32, 0])), [i * 32, 0], out)
    """, "ok"),
    # P6.const-view-shape: loop_unroll's factor is a plain int, usable in a view shape
    "loop_unroll_shape": (JIT, """
        pypto.set_vec_tile_shapes(8, 512)
        for i, n in pypto.loop_unroll(0, R // 8, 1, unroll_list=[2, 1]):
            chunk = pypto.view(x, [n * 8, C], [i * 8, 0])
            pypto.assemble(pypto.exp(chunk), [i * 8, 0], out)
    """, "ok"),
    # P6.unroll-innermost: an unroll_list on the outer of two loops
    "unroll_outer_loop": (JIT, """
        pypto.set_vec_tile_shapes(16, 256)
        for i, n in pypto.loop_unroll(0, 2, 1, unroll_list=[2, 1]):
            for j in pypto.loop(2):
                block = pypto.view(x, [32 * n, 256], [i * 32, j * 256])
                pypto.assemble(pypto.exp(block), [i * 32, j * 256], out)
    """, "ok"),
    # P6.const-view-shape: a view shape that moves with the loop index
    "view_shape_symbolic": (JIT, """
        pypto.set_vec_tile_shapes(8, 512)
        for i in pypto.loop(2):
            chunk = pypto.view(x, [(i + 1) * 32 - i * 32, C], [i * 32, 0])
            pypto.assemble(pypto.exp(chunk), [i * 32, 0], out)
    """, "compile_error: View(): incompatible function arguments"),
    # API.reshape-int-shape: a non-inplace reshape to a shape computed from the loop index
    "reshape_symbolic_shape": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        for i in pypto.loop(2):
            half = pypto.view(x, [32, C], [i * 32, 0])
            flat = pypto.reshape(half, [(i - i + 32) * C])
            pypto.set_vec_tile_shapes(8192)
            y = pypto.exp(flat)
            pypto.set_vec_tile_shapes(16, 512)
            pypto.assemble(pypto.reshape(y, [32, C]), [i * 32, 0], out)
    """, "compile_error: Reshape(): incompatible function arguments"),
    # P4.tile-budget / HW.ub-capacity: a tile four times the tensor (256 KiB unclipped, 128 KiB clipped)
    "tile_larger_than_tensor": (JIT, """
        pypto.set_vec_tile_shapes(128, 512)
        out.move(pypto.exp(x))
    """, "ok"),
    # HW.ub-capacity: a binary op on 128 KiB tiles holds two of them (an exp on one fits)
    "binary_op_128k_tile": (JIT, """
        pypto.set_vec_tile_shapes(64, 512)
        e = pypto.exp(x)
        out.move(e * 0.5 + e * 0.5)
    """, "compile_error: exceeds MEM_UB size"),
    # HW.ub-capacity: an op whose input dies there works in place (one 128 KiB tile); when the input
    # is still needed afterwards the op holds input and output (two tiles, 256 KiB)
    "ub_input_dies_128k": (JIT, """
        pypto.set_vec_tile_shapes(64, 512)
        out.move(pypto.exp(x * 1.0))
    """, "ok"),
    "ub_input_live_128k": (JIT, """
        pypto.set_vec_tile_shapes(64, 512)
        out.move(pypto.exp(x) + x * 0.0)
    """, "compile_error: exceeds MEM_UB size"),
    # API.single-dim-reduce: a reduction over two axes at once
    "reduce_two_dims": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        s = pypto.sum(x, (0, 1), keepdim=True)
        out.move(pypto.exp(x) + s * 0.0)
    """, "compile_error: Sum(): incompatible function arguments"),
    "reduce_128k_tile": (JIT, """
        pypto.set_vec_tile_shapes(64, 512)
        s = pypto.sum(x, 1, keepdim=True)
        out.move(pypto.exp(x) + s * 0.0)
    """, "compile_error: exceeds MEM_UB size"),
    # HW.concat-reduce-align spares a reduction along another axis than the last: 16 bytes pass
    "reduce_axis0_16_byte_tile": (JIT, """
        pypto.set_vec_tile_shapes(64, 4)
        s = pypto.sum(x, 0, keepdim=True)
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(x) + s * 0.0)
    """, "ok"),
    # P6.const-view-shape / P1.static-shape: a symbolic scalar of a constant is a fixed shape
    "symbolic_scalar_view_shape": (JIT, """
        pypto.set_vec_tile_shapes(16, 512)
        rows = pypto.symbolic_scalar(16)
        for i in pypto.loop(4):
            pypto.assemble(pypto.exp(pypto.view(x, [rows, C], [i * 16, 0])), [i * 16, 0], out)
    """, "ok"),
    # API.tiles-before-ops: a transpose traced before any vec tile (PyPTO's examples/.../function.py)
    "transpose_before_tiles": (JIT, """
        xt = pypto.transpose(x, 0, 1)
        pypto.set_vec_tile_shapes(64, 64)
        back = pypto.transpose(xt, 0, 1)
        pypto.set_vec_tile_shapes(16, 512)
        out.move(pypto.exp(back))
    """, "compile_error: TileShape dim num should same to input"),
}


def probe_source(name: str) -> str:
    """The kernel module of probe `name`."""
    decorator, body, _expected = PROBES[name]
    code = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    return _MODULE.format(decorator=decorator, body=code)
