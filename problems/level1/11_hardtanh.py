import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """HardTanh: clamp to [min_val, max_val]."""

    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 8192
dim = 8192
min_val = -1.5
max_val = 2.0
SMALL_SIZES = {"batch_size": 2048, "dim": 2048}
CHECK_SIZES = {"batch_size": 2560, "dim": 2560}


def get_inputs():
    x = torch.randn(batch_size, dim) * 2.0
    return [x]


def get_init_inputs():
    return [min_val, max_val]
