"""timm's Hiera-Tiny (hierarchical ViT with mask-unit attention) for 64x64 images, random init."""

import timm
import torch


def build_model():
    torch.manual_seed(0)
    return timm.create_model("hiera_tiny_224", pretrained=False, img_size=(64, 64), num_classes=10).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 64, 64),)
