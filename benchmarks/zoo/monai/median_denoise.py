"""A denoise-then-segment model: MONAI's MedianFilter layer (3x3 median) as a built-in
preprocessing step in front of a 2D MONAI UNet."""

import torch
from monai.networks.layers import MedianFilter
from monai.networks.nets import UNet
from torch import nn


class DenoiseSegment(nn.Module):
    def __init__(self):
        super().__init__()
        self.denoise = MedianFilter(radius=1, spatial_dims=2)
        self.segment = UNet(spatial_dims=2, in_channels=1, out_channels=2, channels=(8, 16), strides=(2,),
                            num_res_units=1)

    def forward(self, image):
        return self.segment(self.denoise(image))


def build_model():
    torch.manual_seed(0)
    return DenoiseSegment().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 1, 32, 32),)
