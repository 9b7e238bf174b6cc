"""One sampler step in the graph: diffusers' EulerDiscreteScheduler (SDXL's default) wrapped in a
module that scales the input, applies classifier-free guidance and steps, as ONNX pipelines that
fuse the scheduler do."""

import torch
from diffusers import EulerDiscreteScheduler
from torch import nn


class GuidedEulerStep(nn.Module):
    def __init__(self, steps=10, guidance=7.5):
        super().__init__()
        self.scheduler = EulerDiscreteScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012)
        self.scheduler.set_timesteps(steps)
        self.guidance = guidance

    def forward(self, noise_uncond, noise_text, timestep, latents):
        noise = noise_uncond + self.guidance * (noise_text - noise_uncond)
        return self.scheduler.step(noise, timestep, latents, return_dict=False)[0]


def build_model():
    return GuidedEulerStep().eval()


def example_inputs():
    torch.manual_seed(0)
    scheduler = EulerDiscreteScheduler(beta_schedule="scaled_linear", beta_start=0.00085, beta_end=0.012)
    scheduler.set_timesteps(10)
    return torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8), scheduler.timesteps[0], torch.randn(1, 4, 8, 8)
