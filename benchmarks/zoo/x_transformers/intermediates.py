"""A GPT-style x-transformers decoder (rotary positions) asked for its intermediates — the
per-layer hiddens and attention maps — next to the logits, as one does to inspect attention."""

import torch
from x_transformers import Decoder, TransformerWrapper


def build_model():
    torch.manual_seed(0)
    return TransformerWrapper(
        num_tokens=256, max_seq_len=128,
        attn_layers=Decoder(dim=64, depth=2, heads=4, rotary_pos_emb=True),
    ).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 256, (2, 24)),), {"return_intermediates": True}
