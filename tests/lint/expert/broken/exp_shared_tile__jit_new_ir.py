"""Exp with one tile shared by every shape a model uses: (64, 1024) covers the largest, and on
this (8, 1024) input the compiler clips it to the tensor."""
# expert-set: expect=API.jit-options pypto=0.2.0

import pypto
import torch

SHARED_TILE = (64, 1024)
SHAPE = (8, 1024)


@pypto.frontend.jit(new_ir=True)
def exp_kernel(x: pypto.Tensor(SHAPE, pypto.DT_FP32), out: pypto.Tensor(SHAPE, pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(*SHARED_TILE)
    out.move(pypto.exp(x))


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        exp_kernel(x.contiguous(), out)
        return out
