import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 4096
SCALE = 1.5


class Model(nn.Module):
    """Scale, add a per-channel bias, exact GELU, then clamp to [-0.5, 2.0]."""

    def __init__(self, dim: int, scale: float):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(dim) * 0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp(F.gelu(x * self.scale + self.bias), min=-0.5, max=2.0)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM, SCALE]


SMALL_SIZES = {"BATCH": 256, "DIM": 1024}
CHECK_SIZES = {"BATCH": 320, "DIM": 1280}
