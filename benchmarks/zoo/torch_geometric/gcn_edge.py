"""A node classifier: a GCNConv layer, then an EdgeConv-style layer written by the user as a
torch_geometric MessagePassing subclass with max aggregation (scatter_reduce 'amax')."""

import torch
from torch import nn
from torch_geometric.nn import GCNConv, MessagePassing


class EdgeMax(MessagePassing):
    def __init__(self, channels, out_channels):
        super().__init__(aggr="max")
        self.mlp = nn.Sequential(nn.Linear(2 * channels, out_channels), nn.ReLU(), nn.Linear(out_channels, out_channels))

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)

    def message(self, x_i, x_j):
        return self.mlp(torch.cat([x_i, x_j - x_i], dim=-1))


class NodeClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.gcn = GCNConv(16, 32)
        self.edge = EdgeMax(32, 32)
        self.out = nn.Linear(32, 5)

    def forward(self, x, edge_index):
        h = self.gcn(x, edge_index).relu()
        return self.out(self.edge(h, edge_index))


def build_model():
    torch.manual_seed(0)
    return NodeClassifier().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(20, 16), torch.randint(0, 20, (2, 60)))
