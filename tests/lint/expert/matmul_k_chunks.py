"""fp32 `a.T @ b` with a long K (1024) taken in four chunks by a `pypto.loop`. Both operands come
K-major, so each chunk is a contiguous block of rows; the cube reads A transposed. The output
parameter carries the running sum: a local accumulator moved out after a loop would be lost in 0.2.0."""
# expert-set: task=matmul_long_k.py

import pypto
import torch

M, K, N = 128, 1024, 256
KB = 256


@pypto.frontend.jit
def matmul_k_kernel(
    a_t: pypto.Tensor((K, M), pypto.DT_FP32),
    b: pypto.Tensor((K, N), pypto.DT_FP32),
    c: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(64, 256)
    pypto.set_cube_tile_shapes([64, 128], [64, 256], [128, 128])
    c.move(pypto.zeros(M, N))
    for kk in pypto.loop(K // KB):
        lhs = pypto.view(a_t, [KB, M], [kk * KB, 0])
        rhs = pypto.view(b, [KB, N], [kk * KB, 0])
        c.move(c + pypto.matmul(lhs, rhs, pypto.DT_FP32, a_trans=True))


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty((a.shape[1], b.shape[1]), dtype=torch.float32)
        matmul_k_kernel(a.contiguous(), b.contiguous(), c)
        return c
