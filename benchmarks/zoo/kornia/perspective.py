"""kornia's perspective warp, driven by four predicted corner points (as a homography head does)."""

import torch
from kornia.geometry.transform import get_perspective_transform, warp_perspective
from torch import nn


class Rectifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(3 * 32 * 32, 8)

    def forward(self, image):
        corners = self.head(image.flatten(1)).view(-1, 4, 2) + torch.tensor(
            [[0.0, 0.0], [31.0, 0.0], [31.0, 31.0], [0.0, 31.0]])
        target = torch.tensor([[[0.0, 0.0], [31.0, 0.0], [31.0, 31.0], [0.0, 31.0]]]).expand_as(corners)
        matrix = get_perspective_transform(corners, target)
        return warp_perspective(image, matrix, (32, 32))


def build_model():
    torch.manual_seed(0)
    return Rectifier().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(2, 3, 32, 32),)
