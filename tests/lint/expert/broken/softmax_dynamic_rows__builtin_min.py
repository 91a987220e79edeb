"""Row softmax over a dynamic number of rows: one pypto.loop over row blocks, the ragged last
block handled by valid_shape, the arithmetic in a helper the kernel calls."""
# expert-set: expect=V020.builtin-minmax pypto=0.2.0

import pypto
import torch

COLS = 512
BLOCK = 24


def row_softmax(block):
    peak = pypto.amax(block, 1, keepdim=True)
    e = pypto.exp(block - peak)
    return e / pypto.sum(e, 1, keepdim=True)


@pypto.frontend.jit
def softmax_kernel(
    x: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
    out: pypto.Tensor([pypto.DYNAMIC, COLS], pypto.DT_FP32),
):
    rows = x.shape[0]
    pypto.set_vec_tile_shapes(8, COLS)
    for b in pypto.loop(pypto.ceildiv(rows, BLOCK)):
        start = b * BLOCK
        valid = min(BLOCK, rows - start)
        block = pypto.view(x, [BLOCK, COLS], [start, 0], valid_shape=[valid, COLS])
        pypto.assemble(row_softmax(block), [start, 0], out)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel(x.contiguous(), out)
        return out
