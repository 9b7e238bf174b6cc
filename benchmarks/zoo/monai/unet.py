"""MONAI's 3D UNet (residual units) for volume segmentation, exported with a dynamic batch and
dynamic spatial dimensions, as a deployment for volumes of any size would be."""

import torch
from monai.networks.nets import UNet
from torch.export import Dim


def build_model():
    torch.manual_seed(0)
    return UNet(spatial_dims=3, in_channels=1, out_channels=2, channels=(8, 16, 32), strides=(2, 2),
                num_res_units=2).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 1, 32, 32, 32),)


def dynamic_shapes():
    return ({0: Dim("batch", max=8), 2: Dim("depth", min=16, max=256), 3: Dim("height", min=16, max=256),
             4: Dim("width", min=16, max=256)},)
