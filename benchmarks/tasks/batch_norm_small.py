import torch
import torch.nn as nn


class Model(nn.Module):
    """Batch normalization of a small feature map, statistics from the batch."""

    def __init__(self, channels: int):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_features=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch = 8
channels = 32
height = 64
width = 64


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [channels]
