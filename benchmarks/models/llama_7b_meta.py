"""A 7B Llama (32 layers, hidden 4096: 6.7 B parameters, 27 GB in fp32) built on the meta device:
no weight memory, the way people check whether a big model exports on a laptop."""

import torch
from transformers import LlamaConfig, LlamaModel

CONFIG = dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=32, num_attention_heads=32,
              num_key_value_heads=32, vocab_size=32000, max_position_embeddings=2048)


def build_model() -> LlamaModel:
    with torch.device("meta"):
        model = LlamaModel(LlamaConfig(**CONFIG, use_cache=False))
    return model.eval()


def example_inputs():
    return (torch.zeros(1, 32, dtype=torch.long, device="meta"),)
