"""A PixArt-alpha DiT: diffusers' PixArtTransformer2DModel (one block, random init) with T5-style
caption embeddings."""

import torch
from diffusers import PixArtTransformer2DModel


def build_model():
    torch.manual_seed(0)
    return PixArtTransformer2DModel(num_attention_heads=2, attention_head_dim=8, in_channels=4, out_channels=8,
                                    num_layers=1, sample_size=8, patch_size=2, cross_attention_dim=16,
                                    caption_channels=32).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 4, 8, 8),), {"encoder_hidden_states": torch.randn(2, 7, 32),
                                        "timestep": torch.tensor([10, 500]),
                                        "added_cond_kwargs": {"resolution": None, "aspect_ratio": None}}
