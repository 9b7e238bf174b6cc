"""BART for conditional generation, one full forward (encoder ids + decoder ids), no cache."""

import torch
from transformers import BartConfig, BartForConditionalGeneration


def build_model():
    torch.manual_seed(0)
    config = BartConfig(vocab_size=1000, d_model=64, encoder_layers=2, decoder_layers=2,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=128,
                        decoder_ffn_dim=128, max_position_embeddings=128, use_cache=False)
    return BartForConditionalGeneration(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    decoder_input_ids = torch.randint(3, 1000, (2, 8))
    return (input_ids,), {"decoder_input_ids": decoder_input_ids}
