"""timm's MaxViT-nano (relative-position window and grid attention between MBConv blocks) for
64x64 images, random init."""

import timm
import torch


def build_model():
    torch.manual_seed(0)
    return timm.create_model("maxvit_nano_rw_256", pretrained=False, img_size=64, num_classes=10).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)
