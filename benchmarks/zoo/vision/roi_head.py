"""A two-stage detector's second stage: a small conv backbone (stride 4), torchvision's RoIAlign over
the proposals, and a box head predicting class scores and box deltas per proposal."""

import torch
import torchvision  # noqa: F401  (as a detection model's code imports it; registers torchvision::*)
from torch import nn
from torchvision.ops import roi_align


class RoIHead(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
                                      nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU())
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 7 * 7, 64), nn.ReLU())
        self.scores = nn.Linear(64, num_classes)
        self.deltas = nn.Linear(64, num_classes * 4)

    def forward(self, images, proposals):
        features = self.backbone(images)
        pooled = roi_align(features, proposals, output_size=(7, 7), spatial_scale=0.25, sampling_ratio=2,
                           aligned=True)
        hidden = self.head(pooled)
        return self.scores(hidden), self.deltas(hidden)


def build_model():
    torch.manual_seed(0)
    return RoIHead().eval()


def example_inputs():
    torch.manual_seed(0)
    corners = torch.rand(8, 2) * 40
    sizes = 8 + torch.rand(8, 2) * 24
    proposals = torch.cat([torch.tensor([0.0] * 4 + [1.0] * 4)[:, None], corners, corners + sizes], 1)
    return (torch.rand(2, 3, 64, 64), proposals)
