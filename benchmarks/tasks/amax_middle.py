import torch
import torch.nn as nn


class Model(nn.Module):
    """Largest value along the middle axis of a 3-D tensor."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim)[0]


batch = 8
length = 128
channels = 512


def get_inputs():
    return [torch.randn(batch, length, channels)]


def get_init_inputs():
    return [1]
