"""Exp over row blocks of a tensor declared `[pypto.DYNAMIC, ...]` (a dynamic leading axis, the
rest read from the input): the lint must not count `...` as an axis."""
# expert-set: task=exp.py

import pypto
import torch


@pypto.frontend.jit
def exp_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, ...], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_vec_tile_shapes(16, 512)
    for b in pypto.loop(pypto.ceildiv(rows, 16)):
        valid = pypto.min(16, rows - b * 16)
        block = pypto.view(x, [16, 512], [b * 16, 0], valid_shape=[valid, 512])
        pypto.assemble(pypto.exp(block), [b * 16, 0], out)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        exp_kernel(x.contiguous(), out)
        return out
