import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """bf16 matrix multiplication C = A @ B (bf16 inputs and output; fp32 accumulation is fine)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 4096
K = 4096
N = 4096
SMALL_SIZES = {"M": 512, "K": 512, "N": 512}
CHECK_SIZES = {"M": 640, "K": 640, "N": 640}


def get_inputs():
    A = torch.randn(M, K, dtype=torch.bfloat16)
    B = torch.randn(K, N, dtype=torch.bfloat16)
    return [A, B]


def get_init_inputs():
    return []
