"""fp16 matmul with an fp32 result: cube tiles as [L0, L1] pairs (k with separate L1 sizes for
A and B), a pypto.loop along M writing each row block with assemble."""
# expert-set: expect=B.matmul-cube-tiles

import pypto
import torch

M, K, N = 128, 256, 512
MB = 64


@pypto.frontend.jit
def matmul_kernel(
    a: pypto.Tensor((M, K), pypto.DT_FP16),
    b: pypto.Tensor((K, N), pypto.DT_FP16),
    c: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([64, 96], [64, 128, 256], [128, 128])
    for i in pypto.loop(M // MB):
        rows = pypto.view(a, [MB, K], [i * MB, 0])
        pypto.assemble(pypto.matmul(rows, b, pypto.DT_FP32), [i * MB, 0], c)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32)
        matmul_kernel(a.contiguous(), b.contiguous(), c)
        return c
