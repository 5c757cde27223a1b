import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Mean cross-entropy of logits against integer class targets (log_softmax + NLL)."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits, targets)


batch_size = 8192
num_classes = 16384
SMALL_SIZES = {"batch_size": 1024, "num_classes": 4096}
CHECK_SIZES = {"batch_size": 1280, "num_classes": 5120}


def get_inputs():
    logits = torch.randn(batch_size, num_classes) * 2.0
    targets = torch.randint(0, num_classes, (batch_size,))
    return [logits, targets]


def get_init_inputs():
    return []
