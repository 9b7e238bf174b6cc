"""T5 for conditional generation, one full forward (encoder ids + decoder ids), no cache."""

import torch
from transformers import T5Config, T5ForConditionalGeneration


def build_model():
    torch.manual_seed(0)
    config = T5Config(vocab_size=1000, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_heads=4, use_cache=False)
    return T5ForConditionalGeneration(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    decoder_input_ids = torch.randint(3, 1000, (2, 8))
    return (input_ids,), {"decoder_input_ids": decoder_input_ids}
