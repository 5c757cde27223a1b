import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 64
DIM = 512
HIDDEN = 2048


class Model(nn.Module):
    """Pre-norm transformer MLP block: x + fc2(gelu(fc1(layernorm(x))))."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [DIM, HIDDEN]


SMALL_SIZES = {"BATCH": 16, "DIM": 128, "HIDDEN": 512}
CHECK_SIZES = {"BATCH": 20, "DIM": 160, "HIDDEN": 640}
