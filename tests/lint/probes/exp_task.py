"""The baseline every compiler probe of the lint is checked against: out = exp(x) on (64, 512) fp32."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.exp(x)


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return []
