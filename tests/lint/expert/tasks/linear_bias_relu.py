import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w, bias):
        return torch.relu(x @ w + bias)


def get_inputs():
    return [torch.randn(128, 256), torch.randn(256, 256), torch.randn(1, 256)]


def get_init_inputs():
    return []
