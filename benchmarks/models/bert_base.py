"""BERT-base as transformers builds it (12 layers, hidden 768, 110 M parameters), random init
from the default config: no download. A real-size model of the kind users export."""

import torch
from transformers import BertConfig, BertModel


def build_model() -> BertModel:
    torch.manual_seed(0)
    return BertModel(BertConfig()).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(0, 30522, (1, 128))
    attention_mask = torch.ones(1, 128, dtype=torch.long)
    return (input_ids, attention_mask)
