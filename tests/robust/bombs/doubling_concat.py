"""A tuple doubled thirty times."""

import torch
import torch.nn as nn

T = tuple(range(4096))
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
T = T + T
N = len(T)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(16, N % 7 + 1)]


def get_init_inputs():
    return []
