"""A thin-plate-spline spatial transformer (as in text-recognition rectifiers): a localisation net
predicts control-point offsets, kornia fits the spline and warps the image."""

import torch
from kornia.geometry.transform import get_tps_transform, warp_image_tps
from torch import nn


class TPSRectifier(nn.Module):
    def __init__(self, grid=3):
        super().__init__()
        axis = torch.linspace(-1.0, 1.0, grid)
        points = torch.stack(torch.meshgrid(axis, axis, indexing="xy"), -1).reshape(1, grid * grid, 2)
        self.register_buffer("control", points)
        self.localization = nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
            nn.Linear(8 * 4 * 4, grid * grid * 2))

    def forward(self, image):
        batch = image.shape[0]
        source = self.control.expand(batch, -1, -1)
        target = source + 0.1 * torch.tanh(self.localization(image)).view(batch, -1, 2)
        kernel_weights, affine_weights = get_tps_transform(target, source)
        return warp_image_tps(image, source, kernel_weights, affine_weights)


def build_model():
    torch.manual_seed(0)
    return TPSRectifier().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(2, 3, 32, 32),)
