"""Probe: a GEMM epilogue fused into the matmul kernel by hand (fusion.toml, FUSE.matmul-separate).

Pattern B does not write an epilogue yet; this module is the generated matmul kernel of task.py with
relu((x @ W.T + b) * 0.5) computed on each M chunk before it is assembled. Measured with:

    EP_VEC=64,256 EP_LOOP=4 pypto-tui verify benchmarks/probes/matmul_epilogue/task.py \
        --kernel benchmarks/probes/matmul_epilogue/fused.py --scale full
    EP_VEC=64,256 EP_LOOP=4 pypto-tui sim benchmarks/probes/matmul_epilogue/task.py \
        --kernel benchmarks/probes/matmul_epilogue/fused.py
    pypto-tui sim benchmarks/probes/matmul_epilogue/task.py --fusion compare
"""

import functools
import os

import pypto
import torch
import torch.nn as nn

# Run modes, as in the documents: AIKG_PYPTO_RUN_MODE 0 = NPU, 1 = SIM. pypto 0.2.0 defaults to
# SIM when CANN is absent (ASCEND_HOME_PATH unset), so the default here follows that.
# SIM times a kernel with the cost model and computes NO output values. So in SIM mode every
# kernel call here either computes the outputs with pypto's interpreter on the CPU, when
# PYPTO_TUI_INTERPRET=1 is set (slow; needs `pip install 'pypto-tui[sim]'`; pypto's files go
# to a temp folder, never the working directory), or raises an error that says so.
# To check this kernel against its task: pypto-tui verify TASK --kernel THIS_FILE
_PYPTO_RUN_MODE = int(os.getenv("AIKG_PYPTO_RUN_MODE", "0" if os.getenv("ASCEND_HOME_PATH") else "1"))
_PYPTO_RUNTIME_DEBUG_MODE = int(os.getenv("AIKG_PYPTO_RUNTIME_DEBUG_MODE", "0"))
RUNTIME_OPTIONS = {"run_mode": _PYPTO_RUN_MODE}
DEBUG_OPTIONS = {"runtime_debug_mode": _PYPTO_RUNTIME_DEBUG_MODE}


def ceil_div(a, b):
    return (a + b - 1) // b


def _for_this_machine(kernel):
    """The jit kernel on an NPU; in SIM mode, pypto-tui's wrapper (interpret or refuse)."""
    if _PYPTO_RUN_MODE != 1:
        return kernel
    try:
        from pypto_tui.sim.on_cpu import sim_mode_kernel
    except ImportError:
        raise RuntimeError(
            "pypto runs in SIM mode here (no NPU), which computes no output values: "
            "pip install 'pypto-tui[sim]' and set PYPTO_TUI_INTERPRET=1 to compute them on the CPU"
        ) from None
    return sim_mode_kernel(kernel)


# CUBE_M, CUBE_K, CUBE_N: set_cube_tile_shapes for M=256, K=256, N=1024 fp32 from the pack's starting cube
#   tiles (presets.toml [cube]) (B.matmul-cube-tiles):
#   L0A 16384 B, L0B 32768 B, L0C 131072 B, L1 196608 B; 8 cube task(s) over the output.
CUBE_M_K0 = [128, 128]
CUBE_K_K0 = [32, 128]
CUBE_N_K0 = [256, 256]

# the epilogue's vec tile and the M loop's iteration count, from the environment so one file probes many
VEC = tuple(int(v) for v in os.environ.get("EP_VEC", "64,256").split(","))
LOOPS = int(os.environ.get("EP_LOOP", "4"))


@functools.cache
def create_fused_kernel(m, k, n):
    BASIC_BATCH = ceil_div(m, LOOPS)
    MAIN_ITERS = m // BASIC_BATCH

    @pypto.frontend.jit(runtime_options=RUNTIME_OPTIONS, debug_options=DEBUG_OPTIONS)
    def fused_kernel(
        x: pypto.Tensor((m, k), pypto.DT_FP32),
        linear_weight: pypto.Tensor((n, k), pypto.DT_FP32),
        linear_bias: pypto.Tensor((1, n), pypto.DT_FP32),
        out: pypto.Tensor((m, n), pypto.DT_FP32),
    ):
        pypto.set_cube_tile_shapes(CUBE_M_K0, CUBE_K_K0, CUBE_N_K0)
        pypto.set_vec_tile_shapes(*VEC)
        for bi in pypto.loop(0, MAIN_ITERS, 1, name="M_LOOP", idx_name="bi"):
            off = bi * BASIC_BATCH
            x_chunk = pypto.view(x, [BASIC_BATCH, k], [off, 0])
            mm = pypto.matmul(x_chunk, linear_weight, pypto.DT_FP32, b_trans=True)
            b_all = pypto.expand_clone(linear_bias, [BASIC_BATCH, n])
            pypto.assemble(pypto.maximum((mm + b_all) * 0.5, 0.0), [off, 0], out)

    return _for_this_machine(fused_kernel)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        m, k = x.shape
        n = self.linear.weight.shape[0]
        kernel = create_fused_kernel(m, k, n)
        out = torch.empty((m, n), dtype=torch.float32)
        kernel(x.contiguous(), self.linear.weight.contiguous(), self.linear.bias.reshape(1, n).contiguous(), out)
        return out
