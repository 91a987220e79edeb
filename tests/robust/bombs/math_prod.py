"""A 12,000-digit product Python refuses to print (issue 25)."""

import math

import torch
import torch.nn as nn

N = math.prod(range(1, 4000))


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, N % 7 + 1)]


def get_init_inputs():
    return []
