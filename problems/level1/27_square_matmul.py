import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Square matrix multiplication C = A @ B (fp32, no TF32)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096
SMALL_SIZES = {"N": 512}
CHECK_SIZES = {"N": 640}


def get_inputs():
    A = torch.randn(N, N)
    B = torch.randn(N, N)
    return [A, B]


def get_init_inputs():
    return []
