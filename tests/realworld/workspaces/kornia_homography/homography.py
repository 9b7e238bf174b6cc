"""A homography from point matches with kornia's DLT, SVD solver: kornia reaches torch.linalg.svd
four helpers deep (find_homography_dlt -> _homography_from_dlt_system -> _svd_null_vector ->
_torch_svd_cast), and ONNX has no SVD."""

import torch
from kornia.geometry.homography import find_homography_dlt
from torch import nn


class Homography(nn.Module):
    def forward(self, points1, points2):
        return find_homography_dlt(points1, points2, solver="svd")


def build_model():
    return Homography().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 8, 2), torch.rand(1, 8, 2))
