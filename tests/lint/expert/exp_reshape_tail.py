"""Exp on row blocks flattened inside the kernel: pypto.reshape with valid_shape carries the
ragged last block through the 1-D computation and back."""
# expert-set: task=exp.py

import pypto
import torch

R, C = 64, 512
B = 24


@pypto.frontend.jit
def exp_flat_kernel(x: pypto.Tensor((R, C), pypto.DT_FP32), out: pypto.Tensor((R, C), pypto.DT_FP32)):
    for i in pypto.loop(pypto.ceildiv(R, B)):
        valid = pypto.min(B, R - i * B)
        block = pypto.view(x, [B, C], [i * B, 0], valid_shape=[valid, C])
        pypto.set_vec_tile_shapes(8, C)
        flat = pypto.reshape(block, [B * C], valid_shape=[valid * C])
        pypto.set_vec_tile_shapes(4096)
        y = pypto.exp(flat)
        back = pypto.reshape(y, [B, C], valid_shape=[valid, C])
        pypto.set_vec_tile_shapes(8, C)
        pypto.assemble(back, [i * B, 0], out)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        exp_flat_kernel(x.contiguous(), out)
        return out
