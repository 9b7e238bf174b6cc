"""Qwen2-VL's vision tower on its own (the image encoder of a VLM export): flattened patches plus the
(temporal, height, width) patch grid of each image."""

import torch
from transformers import Qwen2VLVisionConfig
from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VisionTransformerPretrainedModel


def build_model():
    torch.manual_seed(0)
    config = Qwen2VLVisionConfig(depth=2, embed_dim=64, hidden_size=64, num_heads=2, mlp_ratio=2, patch_size=4,
                                 spatial_merge_size=2, temporal_patch_size=2, in_channels=3)
    return Qwen2VisionTransformerPretrainedModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    grid_thw = torch.tensor([[1, 4, 4]])  # one image of 4x4 patches
    pixel_values = torch.randn(16, 3 * 2 * 4 * 4)  # (patches, channels * temporal * patch * patch)
    return (pixel_values, grid_thw)
