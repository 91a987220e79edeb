"""Three nested loops of 4096: 68 billion iterations of straight-line code."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    n = 0
    for _a in range(4096):
        for _b in range(4096):
            for _c in range(4096):
                n = n + 1
    return [torch.randn(16, n % 7 + 1)]


def get_init_inputs():
    return []
