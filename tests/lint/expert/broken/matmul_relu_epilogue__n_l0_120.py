"""fp16 matmul into fp32 with its epilogue (ReLU, then a scale) on the vector unit in the same kernel:
the cube tiles size the matmul, the vec tile sizes the two elementwise ops after it."""
# expert-set: expect=B.matmul-cube-tiles

import pypto
import torch

M, K, N = 128, 256, 512


@pypto.frontend.jit
def matmul_relu_kernel(
    a: pypto.Tensor((M, K), pypto.DT_FP16),
    b: pypto.Tensor((K, N), pypto.DT_FP16),
    c: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([64, 128], [64, 256], [120, 120])
    pypto.set_vec_tile_shapes(64, 128)
    c.move(pypto.relu(pypto.matmul(a, b, pypto.DT_FP32)) * 0.5)


class ModelNew(torch.nn.Module):
    def forward(self, a, b):
        c = torch.empty((a.shape[0], b.shape[1]), dtype=torch.float32)
        matmul_relu_kernel(a.contiguous(), b.contiguous(), c)
        return c
