import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """C = A @ B.T where A is stored as (M, K) and B as (N, K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 4096
K = 2048
N = 4096
SMALL_SIZES = {"M": 512, "K": 256, "N": 512}
CHECK_SIZES = {"M": 640, "K": 320, "N": 640}


def get_inputs():
    A = torch.randn(M, K)
    B = torch.randn(N, K)
    return [A, B]


def get_init_inputs():
    return []
