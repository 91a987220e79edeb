"""4096 x 4096 evaluations from two short lines."""

import torch
import torch.nn as nn

R = tuple(range(4096))
N = len([[i * j for j in R] for i in R])


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, N % 7 + 1)]


def get_init_inputs():
    return []
