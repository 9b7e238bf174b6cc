"""GPT-2 exported for generation: the user asks for the key/value cache in the outputs."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel


def build_model():
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=1000, n_embd=64, n_layer=2, n_head=2, n_positions=128)
    return GPT2LMHeadModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    return (input_ids,), {"use_cache": True}
