"""ReLU on a (4096, 4) fp32 tensor: the inner tile is the whole 4-element axis (16 bytes), the
outer tile covers 512 rows."""
# expert-set: expect=P4.tile-rank

import pypto
import torch

R, C = 4096, 4


@pypto.frontend.jit
def relu_kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(512 * C)
    out.move(pypto.relu(x))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel(x.contiguous(), out)
        return out
