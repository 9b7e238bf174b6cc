"""A small MLP: 64 -> 256 -> 256 -> 10. Exports cleanly."""

import torch
from torch import nn


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(64, 256),
            nn.ReLU(),
            nn.Linear(256, 256),
            nn.ReLU(),
            nn.Linear(256, 10),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).softmax(dim=-1)


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(8, 64),)
