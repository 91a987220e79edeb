import torch
import torch.nn as nn


class Model(nn.Module):
    """Group normalization with eight groups over a mid-sized feature map."""

    def __init__(self, groups: int, channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(num_groups=groups, num_channels=channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x)


batch = 32
channels = 64
height = 128
width = 128


def get_inputs():
    return [torch.randn(batch, channels, height, width)]


def get_init_inputs():
    return [8, channels]
