import torch
import torch.nn as nn

BATCH = 16384
DIM = 4096
TEMPERATURE = 2.0


class Model(nn.Module):
    """Softmax over the last dimension of x / temperature."""

    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(BATCH, DIM)]


def get_init_inputs():
    return [TEMPERATURE]


SMALL_SIZES = {"BATCH": 256, "DIM": 512}
CHECK_SIZES = {"BATCH": 320, "DIM": 640}
