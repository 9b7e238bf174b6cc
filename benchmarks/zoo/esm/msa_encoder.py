"""An MSA encoder built from fair-esm's axial blocks (the MSA Transformer's row/column attention)
over per-residue MSA features; the MSA depth and length are dynamic, as MSAs come in any size."""

import torch
from esm.modules import AxialTransformerLayer
from torch import nn
from torch.export import Dim


class MSAEncoder(nn.Module):
    def __init__(self, features=21, dim=64, heads=4, layers=1):
        super().__init__()
        self.project = nn.Linear(features, dim)
        self.layers = nn.ModuleList([AxialTransformerLayer(dim, 4 * dim, heads) for _ in range(layers)])

    def forward(self, msa):  # (B, R, C, F): one-hot residues and gaps per aligned sequence
        x = self.project(msa).permute(1, 2, 0, 3)  # (R, C, B, D), as the axial layers expect
        for layer in self.layers:
            x = layer(x)
        return x.permute(2, 0, 1, 3)


def build_model():
    torch.manual_seed(0)
    return MSAEncoder().eval()


def example_inputs():
    torch.manual_seed(0)
    residues = torch.randint(0, 21, (1, 5, 24))
    return (nn.functional.one_hot(residues, 21).float(),)


def dynamic_shapes():
    return ({1: Dim("depth"), 2: Dim("length")},)
