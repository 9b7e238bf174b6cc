"""A small randomly initialised BERT (transformers), built from a config: no download."""

import torch
from transformers import BertConfig, BertModel


def build_model() -> BertModel:
    torch.manual_seed(0)
    config = BertConfig(hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=256)
    return BertModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 1000, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    return (input_ids, attention_mask)
