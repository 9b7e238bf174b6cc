"""A Swin Transformer image backbone (shifted windows, relative position bias)."""

import torch
from transformers import SwinConfig, SwinModel


def build_model():
    torch.manual_seed(0)
    config = SwinConfig(image_size=32, patch_size=4, embed_dim=32, depths=[2, 2], num_heads=[2, 4], window_size=4)
    return SwinModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 32, 32),)
