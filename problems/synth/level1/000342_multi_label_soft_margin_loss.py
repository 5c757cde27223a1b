"""Synthetic problem (kagent synth, seed 0, candidate 342)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

BATCH = 2048
FEATURES = 4096
DTYPE = torch.float16
PRECISION = "fp16"
SMALL_SIZES = {"BATCH": 512, "FEATURES": 1024}


class Model(nn.Module):
    """MultiLabelSoftMarginLoss (sum)."""

    def __init__(self):
        super().__init__()
        self.multi_label_soft_margin_loss = nn.MultiLabelSoftMarginLoss(reduction='sum')

    def forward(self, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return self.multi_label_soft_margin_loss(x, target)


def get_inputs():
    x = torch.randn(BATCH, FEATURES, dtype=DTYPE)
    target = torch.rand(BATCH, FEATURES, dtype=DTYPE)
    return [x, target]


def get_init_inputs():
    return []
