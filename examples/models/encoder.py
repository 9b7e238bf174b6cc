"""A 6-block transformer encoder (LayerNorm, multi-head attention, GELU MLP), dynamic batch."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.norm2(x))


class Encoder(nn.Module):
    def __init__(self, dim: int = 256, heads: int = 8, depth: int = 6) -> None:
        super().__init__()
        self.layers = nn.ModuleList(Block(dim, heads) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def build_encoder() -> Encoder:
    torch.manual_seed(0)
    return Encoder().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 16, 256),)


def dynamic_shapes():
    return ({0: torch.export.Dim("batch", min=1, max=64)},)
