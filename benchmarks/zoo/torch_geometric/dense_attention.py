"""A graph transformer block (GPS style): GCNConv for local message passing, then
torch_geometric's to_dense_batch to pad each graph and nn.MultiheadAttention across its nodes."""

import torch
from torch import nn
from torch_geometric.nn import GCNConv
from torch_geometric.utils import to_dense_batch


class GraphTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = GCNConv(16, 32)
        self.attention = nn.MultiheadAttention(32, 4, batch_first=True)
        self.lin = nn.Linear(32, 3)

    def forward(self, x, edge_index, batch):
        h = self.conv(x, edge_index).relu()
        dense, mask = to_dense_batch(h, batch)
        attended, _ = self.attention(dense, dense, dense, key_padding_mask=~mask)
        return self.lin(attended[mask])


def build_model():
    torch.manual_seed(0)
    return GraphTransformer().eval()


def example_inputs():
    torch.manual_seed(0)
    edges = torch.cat([torch.randint(0, 8, (2, 24)), torch.randint(8, 20, (2, 36))], 1)
    return (torch.randn(20, 16), edges, torch.tensor([0] * 8 + [1] * 12))
