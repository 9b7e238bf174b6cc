"""A small Mixtral (sparse mixture of experts), config defaults for the experts, no cache."""

import torch
from transformers import MixtralConfig, MixtralForCausalLM


def build_model():
    torch.manual_seed(0)
    config = MixtralConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2,
                           max_position_embeddings=128, use_cache=False)
    return MixtralForCausalLM(config).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(3, 1000, (2, 16)),)
