import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
DIM = 4096


class Model(nn.Module):
    """LayerNorm (with affine parameters) over the last dimension followed by exact GELU."""

    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM]


SMALL_SIZES = {"BATCH": 256, "DIM": 1024}
CHECK_SIZES = {"BATCH": 320, "DIM": 1280}
