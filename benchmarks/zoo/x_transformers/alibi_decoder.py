"""A small GPT-style decoder from x-transformers with ALiBi position bias (the option chosen for
length extrapolation), exported with dynamic batch and sequence length."""

import torch
from torch.export import Dim
from x_transformers import Decoder, TransformerWrapper


def build_model():
    torch.manual_seed(0)
    return TransformerWrapper(
        num_tokens=256, max_seq_len=1024,
        attn_layers=Decoder(dim=64, depth=2, heads=4, alibi_pos_bias=True, alibi_num_heads=2),
    ).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 256, (2, 24)),)


def dynamic_shapes():
    return ({0: Dim("batch"), 1: Dim("length")},)
