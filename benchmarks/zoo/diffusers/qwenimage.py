"""A Qwen-Image MMDiT: diffusers' QwenImageTransformer2DModel (one block, random init) over packed
latents of a 4x4 grid, with a text mask."""

import torch
from diffusers import QwenImageTransformer2DModel
from torch import nn


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = QwenImageTransformer2DModel(patch_size=2, in_channels=16, out_channels=4, num_layers=1,
                                                       attention_head_dim=16, num_attention_heads=2,
                                                       joint_attention_dim=16, axes_dims_rope=(8, 4, 4))

    def forward(self, latents, text, text_mask, timestep):
        shapes = [(1, 4, 4)] * latents.shape[0]  # (frames, height, width) of the packed latent grid
        return self.transformer(latents, text, text_mask, timestep, img_shapes=shapes, return_dict=False)[0]


def build_model():
    torch.manual_seed(0)
    return Denoiser().eval()


def example_inputs():
    torch.manual_seed(0)
    return torch.randn(2, 16, 16), torch.randn(2, 7, 16), torch.ones(2, 7, dtype=torch.long), torch.tensor([0.5, 0.5])
