"""Image -> latents with diffusers' AutoencoderKL (tiny blocks, random init), sampling the latent
distribution as the img2img / training pipelines do (`latent_dist.sample()`)."""

import torch
from diffusers import AutoencoderKL
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.vae = AutoencoderKL(block_out_channels=[32, 64], latent_channels=4,
                                 down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2)

    def forward(self, image):
        latents = self.vae.encode(image).latent_dist.sample()
        return latents * self.vae.config.scaling_factor


def build_model():
    torch.manual_seed(0)
    return Encoder().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.rand(1, 3, 32, 32) * 2 - 1,)
