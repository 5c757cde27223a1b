import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 8192
HIDDEN = 4096


class Model(nn.Module):
    """SwiGLU: split the last dimension in two halves a, b and return silu(a) * b."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = x.chunk(2, dim=-1)
        return F.silu(a) * b


def get_inputs():
    return [torch.randn(BATCH, 2 * HIDDEN)]


def get_init_inputs():
    return []


SMALL_SIZES = {"BATCH": 256, "HIDDEN": 512}
CHECK_SIZES = {"BATCH": 320, "HIDDEN": 640}
