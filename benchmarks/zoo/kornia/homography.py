"""A learned-confidence homography estimator: a small MLP scores each keypoint match, and kornia's
weighted DLT fits the homography from the scored matches (the last stage of a matcher pipeline)."""

import torch
from kornia.geometry.homography import find_homography_dlt
from torch import nn


class WeightedHomography(nn.Module):
    def __init__(self):
        super().__init__()
        self.confidence = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, points1, points2):
        weights = torch.sigmoid(self.confidence(torch.cat([points1, points2], -1))).squeeze(-1)
        return find_homography_dlt(points1, points2, weights)


def build_model():
    torch.manual_seed(0)
    return WeightedHomography().eval()


def example_inputs():
    torch.manual_seed(0)
    points1 = torch.rand(2, 16, 2) * 64
    return (points1, points1 + torch.randn(2, 16, 2))
