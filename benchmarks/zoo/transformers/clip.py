"""CLIP (text and vision towers, projections, logits), as used for zero-shot image classification."""

import torch
from transformers import CLIPConfig, CLIPModel


def build_model():
    torch.manual_seed(0)
    config = CLIPConfig(
        text_config=dict(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, max_position_embeddings=32),
        vision_config=dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                           image_size=32, patch_size=8),
        projection_dim=32)
    return CLIPModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    pixel_values = torch.randn(2, 3, 32, 32)
    return (input_ids, pixel_values)
