import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Softplus with beta and a linear-region threshold."""

    def __init__(self, beta: float, threshold: float):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.softplus(x, beta=self.beta, threshold=self.threshold)


batch_size = 8192
dim = 8192
beta = 2.0
threshold = 10.0
SMALL_SIZES = {"batch_size": 2048, "dim": 2048}
CHECK_SIZES = {"batch_size": 2560, "dim": 2560}


def get_inputs():
    x = torch.randn(batch_size, dim) * 4.0
    return [x]


def get_init_inputs():
    return [beta, threshold]
