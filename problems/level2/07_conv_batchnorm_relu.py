import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Conv2d 3x3 (no bias) -> BatchNorm2d in eval mode (running statistics, always) -> ReLU."""

    def __init__(self, in_channels: int, out_channels: int, eps: float = 1e-5):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=eps)
        with torch.no_grad():  # non-trivial "trained" statistics and affine
            self.bn.running_mean.copy_(0.1 * torch.randn(out_channels))
            self.bn.running_var.copy_(0.5 + torch.rand(out_channels))
            self.bn.weight.copy_(1.0 + 0.2 * torch.randn(out_channels))
            self.bn.bias.copy_(0.1 * torch.randn(out_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        y = F.batch_norm(
            y, self.bn.running_mean, self.bn.running_var, self.bn.weight, self.bn.bias,
            training=False, eps=self.bn.eps,
        )
        return torch.relu(y)


batch_size = 16
in_channels = 64
out_channels = 128
height = 128
width = 128
SMALL_SIZES = {"batch_size": 4, "in_channels": 16, "out_channels": 32, "height": 64, "width": 64}
CHECK_SIZES = {"batch_size": 5, "in_channels": 20, "out_channels": 40, "height": 80, "width": 80}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]
