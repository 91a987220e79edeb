"""Whole, correct kernel modules lint clean (a false positive here would break generated code)."""

from __future__ import annotations

import textwrap

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import format_finding, lint_source

KB = get_kb()

# Research note §1.5 (softmax on (16, 16384), dim=1) in the 0.2.0 flavour, with a factory and a
# ModelNew whose forward only asserts, allocates and calls the kernel.
SOFTMAX_020 = textwrap.dedent('''\
    """Softmax over rows: pypto 0.2.0 flavour."""

    import os

    import pypto
    import torch
    import torch.nn as nn

    _PYPTO_RUN_MODE = int(os.getenv("AIKG_PYPTO_RUN_MODE", "0"))
    _PYPTO_RUNTIME_DEBUG_MODE = int(os.getenv("AIKG_PYPTO_RUNTIME_DEBUG_MODE", "0"))

    ROWS, COLS = 16, 16384
    # P4.tile-budget, O1.contiguous-1kb: prod 8192 <= 16384, auto_tiles 32 <= 2048, 32 KiB contiguous
    TILE = (1, 8192)


    def ceil_div(a, b):
        return (a + b - 1) // b


    def create_softmax_kernel(rows, cols):
        @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
        def kernel(
            x: pypto.Tensor((rows, cols), pypto.DT_FP32),
            out: pypto.Tensor((rows, cols), pypto.DT_FP32),
        ):
            pypto.set_vec_tile_shapes(*TILE)
            m = pypto.amax(x, 1, keepdim=True)
            e = pypto.exp(x - m)
            out.move(e / pypto.sum(e, 1, keepdim=True))

        return kernel


    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def softmax_static(x: pypto.Tensor((ROWS, COLS), pypto.DT_FP32), out: pypto.Tensor((ROWS, COLS), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 8192)
        out.move(pypto.softmax(x, dim=1))


    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self._kernels = {}

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            assert x.dim() == 2
            assert tuple(x.shape) == (ROWS, COLS)
            rows, cols = x.shape
            key = (rows, cols)
            if key not in self._kernels:
                self._kernels[key] = create_softmax_kernel(rows, cols)
            out = torch.empty_like(x)
            self._kernels[key](x.contiguous(), out)
            return out
    ''')

# Pattern A, large: 16384 x 4096 flattened to 1-D, auto_tiles 8192 > 2048, so a pypto.loop of
# view -> compute -> assemble (research note §1.3), with static shapes the tile rules can check.
SCALAR_MUL_LOOP_020 = textwrap.dedent('''\
    import pypto
    import torch
    import torch.nn as nn


    def ceil_div(a, b):
        return (a + b - 1) // b


    M, N = 16384, 4096
    FLAT = M * N
    SCALE = 3.0
    TARGET_LOOP_COUNT = 32  # O2.loop-log-scale: middle of the log scale
    BASIC_BATCH = ceil_div(FLAT, TARGET_LOOP_COUNT)  # 2097152 divides FLAT: no tail (P6.loop-tail)
    NUM_ITERS = ceil_div(FLAT, BASIC_BATCH)
    TILE = 8192  # P4.tile-budget: 8192 <= 16384; per-iteration auto_tiles 256 <= 2048


    @pypto.frontend.jit
    def scalar_mul(a: pypto.Tensor((FLAT,), pypto.DT_FP32), c: pypto.Tensor((FLAT,), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(TILE)
        for bi in pypto.loop(0, NUM_ITERS, 1, name="LOOP", idx_name="bi"):
            off = bi * BASIC_BATCH
            chunk = pypto.view(a, [BASIC_BATCH], [off])
            pypto.assemble(chunk * SCALE, [off], c)


    @pypto.frontend.jit
    def elu(x: pypto.Tensor((FLAT,), pypto.DT_FP32), out: pypto.Tensor((FLAT,), pypto.DT_FP32), alpha=1.0):
        pypto.set_vec_tile_shapes(TILE)
        for bi in pypto.loop(NUM_ITERS):
            chunk = pypto.view(x, [BASIC_BATCH], [bi * BASIC_BATCH])
            pos = pypto.maximum(chunk, 0.0)
            neg = pypto.minimum(chunk, 0.0)
            pypto.assemble(pos + (pypto.exp(neg) - 1.0) * alpha, [bi * BASIC_BATCH], out)


    @pypto.frontend.jit
    def global_sum(x: pypto.Tensor((FLAT,), pypto.DT_FP32), out: pypto.Tensor((1,), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(TILE)
        out.move(pypto.zeros(1))
        for bi in pypto.loop(NUM_ITERS):
            part = pypto.sum(pypto.view(x, [BASIC_BATCH], [bi * BASIC_BATCH]), 0, keepdim=True)
            out.move(out + part)
        out.move(out * (1.0 / FLAT))


    class ModelNew(nn.Module):
        def __init__(self, s: float = 3.0):
            super().__init__()
            self.s = s

        def forward(self, a: torch.Tensor) -> torch.Tensor:
            assert a.dim() == 2
            assert tuple(a.shape) == (M, N)
            flat = a.reshape(-1).contiguous()
            c = torch.empty_like(flat)
            scalar_mul(flat, c)
            return c.reshape(M, N)
    ''')

# Patterns B-E in the 0.2.0 flavour (matmul M-loop, group norm over a flat batch, a two-phase
# per-sample loss, RMSNorm along the batch, KL): the tile rules must see through reductions
# (phase 2's (128,) tile is for the per-sample values, not the (1,) output).
PATTERNS_020 = '''\
import os

import pypto
import torch
import torch.nn as nn


def ceil_div(a, b):
    return (a + b - 1) // b


def create_matmul_kernel(m, k, n):
    LOOP_COUNT = 16
    BASIC_BATCH = ceil_div(m, LOOP_COUNT)
    num_iters = ceil_div(m, BASIC_BATCH)

    @pypto.frontend.jit(runtime_options={"run_mode": pypto.RunMode.SIM})
    def kernel(a: pypto.Tensor((m, k), pypto.DT_FP32), b: pypto.Tensor((n, k), pypto.DT_FP32),
               c: pypto.Tensor((m, n), pypto.DT_FP32)):
        pypto.set_cube_tile_shapes([128, 128], [32, 128], [256, 256])
        for bi in pypto.loop(0, num_iters, 1, name="LOOP", idx_name="bi"):
            off = bi * BASIC_BATCH
            a_chunk = pypto.view(a, [BASIC_BATCH, k], [off, 0])
            pypto.assemble(pypto.matmul(a_chunk, b, pypto.DT_FP32, b_trans=True), [off, 0], c)

    return kernel


G, H = 128, 4096
EPS = 1e-5


@pypto.frontend.jit
def group_norm(x: pypto.Tensor((G, H), pypto.DT_FP32), out: pypto.Tensor((G, H), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 4096)
    inv_hidden = 1.0 / H
    for i in pypto.loop(8):
        off = i * 16
        chunk = pypto.view(x, [16, H], [off, 0])
        mean = pypto.sum(chunk, 1, keepdim=True) * inv_hidden
        sq = pypto.sum(chunk * chunk, 1, keepdim=True) * inv_hidden
        var = sq - mean * mean
        y = (chunk - mean) * pypto.rsqrt(var + EPS)
        pypto.assemble(y, [off, 0], out)


B, D = 128, 4096
MARGIN = 1.0


@pypto.frontend.jit
def triplet(a: pypto.Tensor((B, D), pypto.DT_FP32), p: pypto.Tensor((B, D), pypto.DT_FP32),
            n: pypto.Tensor((B, D), pypto.DT_FP32), out: pypto.Tensor((1,), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 4096)
    dp = pypto.sqrt(pypto.sum((a - p) * (a - p), 1))
    dn = pypto.sqrt(pypto.sum((a - n) * (a - n), 1))
    pypto.set_vec_tile_shapes(128)
    losses = pypto.maximum(dp - dn + MARGIN, 0.0)
    out.move(pypto.sum(losses, 0, keepdim=True) * (1.0 / B))


C_, S_ = 64, 65536


@pypto.frontend.jit
def rms_norm(x: pypto.Tensor((16, C_, S_), pypto.DT_FP32), out: pypto.Tensor((16, C_, S_), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(1, 16, 256)
    for bi in pypto.loop(16):
        chunk = pypto.view(x, [1, C_, S_], [bi, 0, 0])
        ms = pypto.sum(chunk * chunk, 1, keepdim=True) * (1.0 / C_)
        pypto.assemble(chunk * pypto.rsqrt(ms + EPS), [bi, 0, 0], out)


@pypto.frontend.jit
def kl(logp: pypto.Tensor((B, D), pypto.DT_FP32), t: pypto.Tensor((B, D), pypto.DT_FP32),
       out: pypto.Tensor((1,), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(4, 4096)
    term = t * (pypto.log(t) - logp)
    pypto.set_vec_tile_shapes(128)
    row = pypto.sum(term, 1)
    out.move(pypto.sum(row, 0, keepdim=True) * (1.0 / B))


class ModelNew(nn.Module):
    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def forward(self, anchor, positive, negative):
        assert anchor.dim() == 2
        out = torch.zeros(1, dtype=anchor.dtype)
        triplet(anchor.contiguous(), positive.contiguous(), negative.contiguous(), out)
        return out.reshape(())
'''

# The documents' flavour: the kernel allocates and returns its output.
ELU_DOCS = textwrap.dedent('''\
    import pypto


    def create_elu_kernel(flat_size, alpha):
        @pypto.frontend.jit
        def kernel(x: pypto.Tensor((flat_size,), pypto.DT_FP32)) -> pypto.Tensor((flat_size,), pypto.DT_FP32):
            output = pypto.tensor([flat_size], pypto.DT_FP32)
            pypto.set_vec_tile_shapes(8192)
            pos = pypto.maximum(x, 0.0)
            neg = pypto.minimum(x, 0.0)
            output[:] = pos + (pypto.exp(neg) - 1.0) * alpha
            return output

        return kernel
    ''')


@pytest.mark.parametrize(
    "source", [SOFTMAX_020, SCALAR_MUL_LOOP_020, PATTERNS_020], ids=["softmax", "scalar_mul_loop", "patterns_b_to_e"]
)
def test_correct_020_modules_lint_clean(source: str) -> None:
    findings = lint_source(source, "kernel.py", KB, flavour="pypto-0.2.0")
    assert findings == [], "\n".join(format_finding(f) for f in findings)


def test_correct_020_module_lints_clean_against_its_task() -> None:
    task = "import torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self, s: float = 3.0):\n" \
           "        super().__init__()\n"
    assert lint_source(SCALAR_MUL_LOOP_020, "k.py", KB, task_source=task) == []


def test_a_returning_docs_kernel_is_flagged_only_for_its_return() -> None:
    """The public examples' returning form: 0.2.0 refuses the return in either flavour, and
    nothing else in the kernel is reported."""
    for flavour in ("docs", "pypto-0.2.0"):
        checks = {f.check for f in lint_source(ELU_DOCS, "elu.py", KB, flavour=flavour)}
        assert checks == {"lint.return_in_kernel"}, flavour


def test_the_same_kernels_with_documented_mistakes_are_caught() -> None:
    bad = SCALAR_MUL_LOOP_020.replace("pos + (pypto.exp(neg) - 1.0) * alpha", "pos + (1.0 - pypto.exp(neg)) * -alpha")
    bad = bad.replace("pypto.set_vec_tile_shapes(TILE)\n    for bi in pypto.loop(0,",
                      "pypto.set_vec_tile_shapes(1, 1, TILE)\n    for bi in pypto.loop(0,")
    assert bad.count("set_vec_tile_shapes(1, 1, TILE)") == 1
    checks = sorted(f.check for f in lint_source(bad, "k.py", KB))
    assert checks == ["lint.scalar_left", "lint.tile_extra_dims"]
