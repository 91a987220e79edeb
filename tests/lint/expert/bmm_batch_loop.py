"""Batched fp32 matmul: one `pypto.loop` over the batch, each trip a (64, 128) x (128, 64) matmul on
rank-2 views, written back with assemble at the batch's offset."""
# expert-set: task=bmm.py

import pypto
import torch

BATCH, M, K, N = 4, 64, 128, 64


@pypto.frontend.jit
def bmm_kernel(
    a: pypto.Tensor((BATCH, M, K), pypto.DT_FP32),
    b: pypto.Tensor((BATCH, K, N), pypto.DT_FP32),
    c: pypto.Tensor((BATCH, M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([32, 64], [64, 128], [64, 64])
    for i in pypto.loop(BATCH):
        lhs = pypto.view(a, [1, M, K], [i, 0, 0])
        rhs = pypto.view(b, [1, K, N], [i, 0, 0])
        pypto.assemble(pypto.matmul(lhs, rhs, pypto.DT_FP32), [i, 0, 0], c)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty((a.shape[0], a.shape[1], b.shape[2]), dtype=torch.float32)
        bmm_kernel(a.contiguous(), b.contiguous(), c)
        return c
