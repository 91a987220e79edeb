"""fp32 `relu(x @ w + bias)` in one kernel: the bias is a (1, N) row the vector unit broadcasts over
the matmul's rows, so the matmul result never goes back to global memory before its epilogue."""
# expert-set: task=linear_bias_relu.py

import pypto
import torch

M, K, N = 128, 256, 256


@pypto.frontend.jit
def linear_bias_relu_kernel(
    x: pypto.Tensor((M, K), pypto.DT_FP32),
    w: pypto.Tensor((K, N), pypto.DT_FP32),
    bias: pypto.Tensor((1, N), pypto.DT_FP32),
    y: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([64, 128], [64, 128], [128, 128])
    pypto.set_vec_tile_shapes(64, 256)
    y.move(pypto.relu(pypto.matmul(x, w, pypto.DT_FP32) + bias))


class ModelNew(torch.nn.Module):
    def forward(self, x, w, bias):
        y = torch.empty((x.shape[0], w.shape[1]), dtype=torch.float32)
        linear_bias_relu_kernel(x.contiguous(), w.contiguous(), bias.contiguous(), y)
        return y
