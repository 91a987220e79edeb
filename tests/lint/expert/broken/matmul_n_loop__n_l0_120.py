"""fp32 linear layer with many output features: the weight is stored (N, K) as nn.Linear keeps it,
and a `pypto.loop` takes it 256 rows at a time (contiguous blocks), each trip one matmul with B read
transposed, written into its columns of the output with assemble."""
# expert-set: expect=B.matmul-cube-tiles

import pypto
import torch

M, K, N = 64, 128, 1024
NB = 256


@pypto.frontend.jit
def linear_cols_kernel(
    x: pypto.Tensor((M, K), pypto.DT_FP32),
    w: pypto.Tensor((N, K), pypto.DT_FP32),
    y: pypto.Tensor((M, N), pypto.DT_FP32),
):
    pypto.set_cube_tile_shapes([64, 64], [64, 128], [120, 240])
    for j in pypto.loop(N // NB):
        rows = pypto.view(w, [NB, K], [j * NB, 0])
        pypto.assemble(pypto.matmul(x, rows, pypto.DT_FP32, b_trans=True), [0, j * NB], y)


class ModelNew(torch.nn.Module):
    def forward(self, x, w):
        y = torch.empty((x.shape[0], w.shape[0]), dtype=torch.float32)
        linear_cols_kernel(x.contiguous(), w.contiguous(), y)
        return y
