"""Llama causal LMs: one with the config's defaults, one with dynamic-NTK RoPE scaling."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM


def build_model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    return LlamaForCausalLM(config).eval()


def build_dynamic_rope_model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False,
                         rope_parameters={"rope_type": "dynamic", "factor": 2.0, "rope_theta": 10000.0})
    return LlamaForCausalLM(config).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(3, 1000, (2, 16)),)
