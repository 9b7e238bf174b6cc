"""An edge-aware colour stem: kornia's colour conversions and Canny edges feeding a small conv head."""

import kornia.color as KC
import kornia.filters as KF
import torch
from torch import nn


class EdgeColorStem(nn.Module):
    def __init__(self):
        super().__init__()
        self.canny = KF.Canny(low_threshold=0.1, high_threshold=0.3)
        self.head = nn.Conv2d(3 + 3 + 2, 16, 3, padding=1)

    def forward(self, rgb):
        lab = KC.rgb_to_lab(rgb) / 100.0
        hsv = KC.rgb_to_hsv(rgb)
        magnitude, edges = self.canny(KF.gaussian_blur2d(rgb, (3, 3), (1.0, 1.0)))
        return self.head(torch.cat([lab, hsv, magnitude, edges], 1))


def build_model():
    torch.manual_seed(0)
    return EdgeColorStem().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 32, 32),)
