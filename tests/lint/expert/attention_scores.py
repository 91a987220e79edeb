"""Attention scores `q @ k.T / sqrt(d)` on (batch, heads, seq, dim) fp32 tensors: one rank-4 matmul
with B read transposed, and the scale applied by the vector unit on the (seq, seq) scores."""
# expert-set: task=attention_scores.py

import math

import pypto
import torch

B, H, S, D = 2, 4, 64, 32
SCALE = 1.0 / math.sqrt(D)


@pypto.frontend.jit
def scores_kernel(
    q: pypto.Tensor((B, H, S, D), pypto.DT_FP32),
    k: pypto.Tensor((B, H, S, D), pypto.DT_FP32),
    s: pypto.Tensor((B, H, S, S), pypto.DT_FP32),
):
    pypto.set_vec_tile_shapes(1, 1, 64, 64)
    pypto.set_cube_tile_shapes([64, 64], [32, 32], [64, 64])
    s.move(pypto.matmul(q, k, pypto.DT_FP32, b_trans=True) * SCALE)


class ModelNew(torch.nn.Module):
    def forward(self, q, k):
        s = torch.empty((*q.shape[:-1], k.shape[-2]), dtype=torch.float32)
        scores_kernel(q.contiguous(), k.contiguous(), s)
        return s
