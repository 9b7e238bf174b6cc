"""Latents -> image with diffusers' AutoencoderKL decoder (tiny blocks, random init) in half
precision, as Stable Diffusion pipelines run their VAE."""

import torch
from diffusers import AutoencoderKL
from torch import nn


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae = AutoencoderKL(block_out_channels=[32, 64], latent_channels=4,
                                 down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2)

    def forward(self, latents):
        image = self.vae.decode(latents / self.vae.config.scaling_factor, return_dict=False)[0]
        return (image / 2 + 0.5).clamp(0, 1)


def build_model():
    torch.manual_seed(0)
    return Decoder().half().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(1, 4, 16, 16).half(),)
