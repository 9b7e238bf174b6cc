"""XLNet encoder with the usual BERT-style inputs: token ids and an integer attention mask."""

import torch
from transformers import XLNetConfig, XLNetModel


def build_model():
    torch.manual_seed(0)
    config = XLNetConfig(vocab_size=1000, d_model=64, n_layer=2, n_head=2, d_inner=128)
    return XLNetModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    return (input_ids, attention_mask)
