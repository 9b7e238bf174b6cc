"""32 identical blocks (d=1024) on the meta device; each block orthogonalises its projection
with torch.linalg.qr, which has no ONNX translation. The responsible line is in `orthogonal`,
a helper the block calls (found by hand: the line marked RESPONSIBLE)."""

import torch
from torch import nn

DEPTH = 32
WIDTH = 1024


def orthogonal(weight: torch.Tensor) -> torch.Tensor:
    q, _ = torch.linalg.qr(weight)  # RESPONSIBLE: no ONNX translation
    return q


class Block(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)
        self.mix = nn.Parameter(torch.empty(width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
        return x + h @ orthogonal(self.mix)


class DeepModel(nn.Module):
    def __init__(self, depth: int = DEPTH, width: int = WIDTH) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(Block(width) for _ in range(depth))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x


def build_model() -> DeepModel:
    with torch.device("meta"):
        return DeepModel().eval()


def example_inputs():
    return (torch.zeros(1, 16, WIDTH, device="meta"),)

