"""Whisper's audio encoder on its own (the first of the usual encoder/decoder ONNX pair), with the
batch and the number of mel frames declared dynamic."""

import torch
from torch.export import Dim
from transformers import WhisperConfig, WhisperForConditionalGeneration


def build_model():
    torch.manual_seed(0)
    config = WhisperConfig(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                           encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                           decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=32, max_target_positions=32,
                           pad_token_id=1, bos_token_id=2, eos_token_id=2, decoder_start_token_id=3)
    return WhisperForConditionalGeneration(config).get_encoder().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 16, 64),)  # (batch, mel bins, frames)


def dynamic_shapes():
    return ({0: Dim("batch"), 2: Dim("frames")},)
