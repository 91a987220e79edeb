"""Layer norm over rows with pypto.loop_unroll: the unroll factor is a plain int per unrolled
copy, so the view shape `[n * ROWS, C]` is a compile-time constant."""
# expert-set: expect=V020.out-rebind

import pypto
import torch

R, C = 64, 512
ROWS = 8
EPS = 1e-5
INV_C = 1.0 / C


@pypto.frontend.jit
def layer_norm_kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(ROWS, C)
    for i, n in pypto.loop_unroll(0, R // ROWS, 1, unroll_list=[4, 1]):
        part = pypto.view(x, [n * ROWS, C], [i * ROWS, 0])
        mean = pypto.sum(part, 1, keepdim=True) * INV_C
        centred = part - mean
        var = pypto.sum(centred * centred, 1, keepdim=True) * INV_C
        out = centred * pypto.rsqrt(var + EPS)  # noqa: F841 (the defect this twin shows)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        layer_norm_kernel(x.contiguous(), out)
        return out
