"""Synthetic problem (kagent synth, seed 0, candidate 134)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 32
CHANNELS = 32
HEIGHT = 256
WIDTH = 512
PADDING = 1
OUTPUT_SIZE = 1
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 4, "HEIGHT": 64, "WIDTH": 128}


class Model(nn.Module):
    """ReplicationPad2d 1 -> adaptive_avg_pool2d to 1 -> concat (dim 1) -> concat (dim 1)."""

    def __init__(self, padding, output_size):
        super().__init__()
        self.replication_pad2d = nn.ReplicationPad2d(padding=padding)
        self.output_size = output_size

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = self.replication_pad2d(x)
        h2 = F.adaptive_avg_pool2d(h, output_size=self.output_size)
        h = torch.cat([h2, y], dim=1)
        return torch.cat([h, h2], dim=1)


def get_inputs():
    x = torch.randn(BATCH, CHANNELS, HEIGHT, WIDTH, dtype=DTYPE)
    y = torch.randn(BATCH, CHANNELS, OUTPUT_SIZE, OUTPUT_SIZE, dtype=DTYPE)
    return [x, y]


def get_init_inputs():
    return [PADDING, OUTPUT_SIZE]
