import torch
import torch.nn as nn

M = 8192
N = 8192


class Model(nn.Module):
    """Swish activation: x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []


SMALL_SIZES = {"M": 256, "N": 1024}
CHECK_SIZES = {"M": 320, "N": 1280}
