import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return torch.matmul(x, w.t())


def get_inputs():
    return [torch.randn(64, 128), torch.randn(1024, 128)]


def get_init_inputs():
    return []
