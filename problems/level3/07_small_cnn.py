import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Small CIFAR-style CNN: two conv-ReLU-maxpool stages, then a two-layer classifier."""

    def __init__(self, num_classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fc1 = nn.Linear(64 * 8 * 8, 256)
        self.fc2 = nn.Linear(256, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(torch.relu(self.conv1(x)), 2)
        x = F.max_pool2d(torch.relu(self.conv2(x)), 2)
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


batch_size = 512
num_classes = 10
SMALL_SIZES = {"batch_size": 8}
CHECK_SIZES = {"batch_size": 10}


def get_inputs():
    return [torch.randn(batch_size, 3, 32, 32)]


def get_init_inputs():
    return [num_classes]
