import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    """Pre-LN encoder block (bidirectional SDPA attention + GELU MLP)."""

    def __init__(self, dim: int, n_heads: int, mlp_dim: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.n_heads, d // self.n_heads).permute(
            2, 0, 3, 1, 4
        )
        y = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


class Model(nn.Module):
    """Tiny ViT: patch-embedding conv, learned positions, encoder blocks, mean-pool, linear head."""

    def __init__(
        self, image_size: int, patch: int, dim: int, depth: int, n_heads: int, mlp_dim: int,
        num_classes: int,
    ):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, dim, patch, stride=patch)
        self.pos = nn.Parameter(0.02 * torch.randn(1, (image_size // patch) ** 2, dim))
        self.blocks = nn.ModuleList([Block(dim, n_heads, mlp_dim) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x).flatten(2).transpose(1, 2) + self.pos
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x).mean(dim=1))


batch_size = 32
image_size = 224
patch = 16
dim = 384
depth = 2
n_heads = 6
mlp_dim = 1536
num_classes = 100
SMALL_SIZES = {
    "batch_size": 4,
    "image_size": 64,
    "patch": 8,
    "dim": 64,
    "n_heads": 2,
    "mlp_dim": 256,
}
CHECK_SIZES = {"batch_size": 5, "image_size": 80, "dim": 80, "mlp_dim": 320}


def get_inputs():
    return [torch.randn(batch_size, 3, image_size, image_size)]


def get_init_inputs():
    return [image_size, patch, dim, depth, n_heads, mlp_dim, num_classes]
