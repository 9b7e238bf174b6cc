"""A model that does not export yet: two operators have no ONNX translation.

`torch.linalg.eigvals` here, and `torch.special.zeta` in the helper in features.py.
onnxlens reports both at once, each on its own line; the stock exporter stops at the first.
"""

import torch
from torch import nn

from models.features import zeta_features


class SpectralNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.proj(x)
        eig = torch.linalg.eigvals(h).real
        return zeta_features(eig) + h.sum()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 4),)
