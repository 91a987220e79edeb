"""Exp over 2-D blocks: a pypto.loop over row blocks with a pypto.loop over column blocks
inside it, as PyPTO's own examples tile both axes."""
# expert-set: task=exp.py

import pypto
import torch

R, C = 64, 512
BR, BC = 32, 256


@pypto.frontend.jit
def blocked_exp(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
    pypto.set_vec_tile_shapes(16, BC)
    for i in pypto.loop(R // BR):
        for j in pypto.loop(C // BC):
            block = pypto.view(x, [BR, BC], [i * BR, j * BC])
            pypto.assemble(pypto.exp(block), [i * BR, j * BC], out)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        blocked_exp(x.contiguous(), out)
        return out
