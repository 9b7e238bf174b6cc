"""ESM-2's contact prediction (per-head attention maps into esm's ContactPredictionHead), with
batch and sequence length dynamic.

ESM2.forward itself does not export (`if not padding_mask.any()`, see esm2_lm.py), so this wrapper
runs the ESM2 model's own modules the way ESM2.forward does for unpadded batches."""

import esm
import torch
from esm.model.esm2 import ESM2
from torch import nn
from torch.export import Dim

ALPHABET = esm.data.Alphabet.from_architecture("ESM-1b")


class ContactPredictor(nn.Module):
    def __init__(self):
        super().__init__()
        self.esm = ESM2(num_layers=2, embed_dim=64, attention_heads=4, alphabet=ALPHABET, token_dropout=False)

    def forward(self, tokens):
        x = self.esm.embed_tokens(tokens).transpose(0, 1)  # (T, B, E)
        maps = []
        for layer in self.esm.layers:
            x, attn = layer(x, need_head_weights=True)
            maps.append(attn.transpose(1, 0))  # (H, B, T, T) -> (B, H, T, T)
        return self.esm.contact_head(tokens, torch.stack(maps, 1))


def build_model():
    torch.manual_seed(0)
    return ContactPredictor().eval()


def example_inputs():
    _, _, tokens = ALPHABET.get_batch_converter()([("a", "MKTAYIAKQRQISFVKSHFSRQ"), ("b", "KALTARQQEVFDLIRDHISQTG")])
    return (tokens,)


def dynamic_shapes():
    return ({0: Dim("batch"), 1: Dim("length")},)
