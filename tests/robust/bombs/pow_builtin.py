"""The built-in pow skipped the power bound: minutes of CPU (issue 25)."""

import torch
import torch.nn as nn

N = pow(10, 10**8)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, N % 7 + 1)]


def get_init_inputs():
    return []
