import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Tiny VGG: two stages of [3x3 conv-ReLU] x 2 + 2x2 maxpool, then an MLP classifier."""

    def __init__(self, image_size: int, num_classes: int):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(128, 128, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        side = image_size // 4
        self.classifier = nn.Sequential(
            nn.Linear(128 * side * side, 256),
            nn.ReLU(),
            nn.Linear(256, num_classes),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x).flatten(1))


batch_size = 64
image_size = 64
num_classes = 100
SMALL_SIZES = {"batch_size": 2, "image_size": 16}
CHECK_SIZES = {"batch_size": 3, "image_size": 20}


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [image_size, num_classes]
