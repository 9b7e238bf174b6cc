"""timm's ViT-Tiny (patch 16) for 64x64 images, random init: a plain vision transformer classifier."""

import timm
import torch


def build_model():
    torch.manual_seed(0)
    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64, num_classes=10).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)
