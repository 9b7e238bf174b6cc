"""ESM-2 (fair-esm) as a protein language model: tokens in, per-residue logits out."""

import esm
import torch
from esm.model.esm2 import ESM2
from torch import nn


class ProteinLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.alphabet = esm.data.Alphabet.from_architecture("ESM-1b")
        self.esm = ESM2(num_layers=2, embed_dim=64, attention_heads=4, alphabet=self.alphabet)

    def forward(self, tokens):
        return self.esm(tokens)["logits"]


def build_model():
    torch.manual_seed(0)
    return ProteinLM().eval()


def example_inputs():
    alphabet = esm.data.Alphabet.from_architecture("ESM-1b")
    converter = alphabet.get_batch_converter()
    _, _, tokens = converter([("p1", "MKTAYIAKQRQISFVKSHFSRQ"), ("p2", "KALTARQQEVFDLIRDHISQTGMPPTRAEIAQRLGFRSPNAAEEHLKALARKGVIEIVSGASRGIRLLQEE")])
    return (tokens,)
