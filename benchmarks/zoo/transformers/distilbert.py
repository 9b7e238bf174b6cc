"""DistilBERT exported with a dynamic batch and sequence length (the usual serving export)."""

import torch
from torch.export import Dim
from transformers import DistilBertConfig, DistilBertModel


def build_model():
    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                              max_position_embeddings=128)
    return DistilBertModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    return (input_ids, attention_mask)


def dynamic_shapes():
    batch, sequence = Dim("batch"), Dim("sequence")
    return ({0: batch, 1: sequence}, {0: batch, 1: sequence})
