"""One Stable-Diffusion denoising step with a ControlNet, as ONNX pipelines export it: diffusers'
ControlNetModel residuals fed into a UNet2DConditionModel (tiny blocks, random init) with FreeU on."""

import torch
from diffusers import ControlNetModel, UNet2DConditionModel
from torch import nn

UNET = dict(block_out_channels=(32, 64), layers_per_block=1, in_channels=4, cross_attention_dim=32,
            attention_head_dim=8, down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"))


class ControlledUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.unet = UNet2DConditionModel(sample_size=16, out_channels=4, up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
                                         **UNET)
        self.controlnet = ControlNetModel.from_unet(self.unet, conditioning_embedding_out_channels=(16, 32))
        self.unet.enable_freeu(s1=0.9, s2=0.2, b1=1.2, b2=1.4)

    def forward(self, latents, timestep, text_embeddings, control_image):
        down, mid = self.controlnet(latents, timestep, text_embeddings, controlnet_cond=control_image,
                                    conditioning_scale=1.0, return_dict=False)
        return self.unet(latents, timestep, text_embeddings, down_block_additional_residuals=down,
                         mid_block_additional_residual=mid).sample


def build_model():
    torch.manual_seed(0)
    return ControlledUNet().eval()


def example_inputs():
    torch.manual_seed(0)
    return torch.randn(2, 4, 16, 16), torch.tensor([10, 500]), torch.randn(2, 7, 32), torch.rand(2, 3, 32, 32)
