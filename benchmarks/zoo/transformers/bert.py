"""A small random-init BERT encoder (BertModel), token ids + attention mask."""

import torch
from transformers import BertConfig, BertModel


def build_model():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=128, max_position_embeddings=128)
    return BertModel(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    attention_mask[1, 12:] = 0  # the second sentence is padded
    return (input_ids, attention_mask)
