"""transformers' BertModel as it comes, in training mode: attention dropout stays on, so torch
and onnxruntime draw different masks. No line of this file computes the value."""

import torch
from transformers import BertConfig, BertModel


def build_model():
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=32,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.5)
    return BertModel(config).train()  # forgot .eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 100, (1, 8)),)
