import torch
import torch.nn as nn

BATCH = 4096
LENGTH = 8192


class Model(nn.Module):
    """Reverse (suffix) cumulative sum along dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cumsum(x.flip(1), 1).flip(1)


def get_inputs():
    return [torch.randn(BATCH, LENGTH)]


def get_init_inputs():
    return []


SMALL_SIZES = {"BATCH": 128, "LENGTH": 2048}
CHECK_SIZES = {"BATCH": 160, "LENGTH": 2560}
