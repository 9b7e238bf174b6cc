"""ViT-MAE's encoder used as an image feature extractor (ViTMAEModel)."""

import torch
from transformers import ViTMAEConfig, ViTMAEModel


def build_model():
    torch.manual_seed(0)
    config = ViTMAEConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                          image_size=32, patch_size=8)
    return ViTMAEModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 3, 32, 32),)
