"""timm's EfficientNet-B0, random init, exported with a dynamic batch size (squeeze-excitation,
depthwise convolutions, SiLU)."""

import timm
import torch
from torch.export import Dim


def build_model():
    torch.manual_seed(0)
    return timm.create_model("efficientnet_b0", pretrained=False, num_classes=10).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(2, 3, 64, 64),)


def dynamic_shapes():
    return ({0: Dim("batch", max=64)},)
