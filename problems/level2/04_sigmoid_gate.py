import torch
import torch.nn as nn

M = 8192
N = 8192


class Model(nn.Module):
    """Gated residual: sigmoid(a) * tanh(b) + a."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(a) * torch.tanh(b) + a


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N)]


def get_init_inputs():
    return []


SMALL_SIZES = {"M": 256, "N": 1024}
CHECK_SIZES = {"M": 320, "N": 1280}
