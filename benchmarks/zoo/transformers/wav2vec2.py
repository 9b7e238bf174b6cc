"""Wav2Vec2 with a CTC head on raw audio (convolutional feature encoder, positional conv, transformer)."""

import torch
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC


def build_model():
    torch.manual_seed(0)
    config = Wav2Vec2Config(vocab_size=32, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3),
                            num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4)
    return Wav2Vec2ForCTC(config).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 4000),)
