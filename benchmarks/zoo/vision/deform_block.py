"""A modulated deformable convolution block (DCNv2, as in deformable detection backbones): a conv
predicts per-tap offsets and a sigmoid mask, torchvision.ops.deform_conv2d samples with them."""

import torch
import torchvision  # noqa: F401  (registers torchvision::*)
from torch import nn
from torchvision.ops import deform_conv2d


class DeformableBlock(nn.Module):
    def __init__(self, channels=16, kernel=3):
        super().__init__()
        self.offsets = nn.Conv2d(channels, 3 * kernel * kernel, kernel, padding=kernel // 2)
        self.weight = nn.Parameter(torch.randn(channels, channels, kernel, kernel) * 0.1)
        self.bias = nn.Parameter(torch.zeros(channels))
        self.norm = nn.BatchNorm2d(channels)

    def forward(self, x):
        offset_x, offset_y, mask = self.offsets(x).chunk(3, dim=1)
        offset = torch.cat([offset_x, offset_y], dim=1)
        out = deform_conv2d(x, offset, self.weight, self.bias, padding=(1, 1), mask=torch.sigmoid(mask))
        return torch.relu(self.norm(out)) + x


def build_model():
    torch.manual_seed(0)
    return DeformableBlock().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 16, 24, 24),)
