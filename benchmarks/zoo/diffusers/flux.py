"""A Flux-style MMDiT: diffusers' FluxTransformer2DModel (one double and one single block, random
init) over packed latents, with image and text token counts dynamic."""

import torch
from diffusers import FluxTransformer2DModel
from torch.export import Dim


def build_model():
    torch.manual_seed(0)
    return FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=1, attention_head_dim=16,
                                  num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32,
                                  axes_dims_rope=[4, 4, 8]).eval()


def example_inputs():
    torch.manual_seed(0)
    height = width = 4  # packed latent grid
    img_ids = torch.zeros(height, width, 3)
    img_ids[..., 1] = torch.arange(height)[:, None]
    img_ids[..., 2] = torch.arange(width)[None, :]
    return {"hidden_states": torch.randn(1, height * width, 16), "encoder_hidden_states": torch.randn(1, 7, 32),
            "pooled_projections": torch.randn(1, 32), "timestep": torch.tensor([0.5]),
            "img_ids": img_ids.reshape(-1, 3), "txt_ids": torch.zeros(7, 3), "return_dict": False}


def dynamic_shapes():
    image, text = Dim("image_tokens"), Dim("text_tokens")
    return {"hidden_states": {1: image}, "encoder_hidden_states": {1: text}, "pooled_projections": None,
            "timestep": None, "img_ids": {0: image}, "txt_ids": {0: text}, "return_dict": None}
