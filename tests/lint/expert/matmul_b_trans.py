"""fp32 `x @ w.T` with the weight kept as (N, K): the cube reads B transposed (`b_trans=True`), so
the wrapper passes the weight as it is stored instead of copying a transposed one."""
# expert-set: task=linear_nt.py

import pypto
import torch

M, K, N = 64, 256, 128


@pypto.frontend.jit
def linear_nt_kernel(
    x: pypto.Tensor((M, K), pypto.DT_FP32),
    w: pypto.Tensor((N, K), pypto.DT_FP32),
    y: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([64, 64], [64, 256], [64, 128])
    y.move(pypto.matmul(x, w, pypto.DT_FP32, b_trans=True))


class ModelNew(torch.nn.Module):
    def forward(self, x, w):
        y = torch.empty((x.shape[0], w.shape[0]), dtype=torch.float32)
        linear_nt_kernel(x.contiguous(), w.contiguous(), y)
        return y
