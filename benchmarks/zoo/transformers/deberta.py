"""DeBERTa-v2 with disentangled relative attention (log-bucketed positions, c2p and p2c terms)."""

import torch
from transformers import DebertaV2Config, DebertaV2Model


def build_model():
    torch.manual_seed(0)
    config = DebertaV2Config(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=128, max_position_embeddings=128, relative_attention=True,
                             position_buckets=32, pos_att_type=["p2c", "c2p"])
    return DebertaV2Model(config).eval()


def example_inputs():
    torch.manual_seed(0)
    input_ids = torch.randint(3, 1000, (2, 16))
    attention_mask = torch.ones(2, 16, dtype=torch.long)
    return (input_ids, attention_mask)
