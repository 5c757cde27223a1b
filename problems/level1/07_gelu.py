import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """GELU (exact erf form) applied elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(x)


batch_size = 8192
dim = 8192
SMALL_SIZES = {"batch_size": 2048, "dim": 2048}
CHECK_SIZES = {"batch_size": 2560, "dim": 2560}


def get_inputs():
    x = torch.randn(batch_size, dim)
    return [x]


def get_init_inputs():
    return []
