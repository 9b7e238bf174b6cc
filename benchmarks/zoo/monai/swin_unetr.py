"""A small 2D SwinUNETR (shifted-window transformer encoder, CNN decoder) for slice segmentation."""

import torch
from monai.networks.nets import SwinUNETR


def build_model():
    torch.manual_seed(0)
    return SwinUNETR(in_channels=1, out_channels=2, feature_size=12, depths=(1, 1, 1, 1), num_heads=(1, 1, 2, 2),
                     spatial_dims=2).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 1, 64, 64),)
