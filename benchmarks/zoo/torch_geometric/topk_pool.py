"""A hierarchical graph classifier (Graph U-Net / SAGPool style): SAGEConv, TopKPooling keeping
half of each graph's nodes, global_mean_pool readout."""

import torch
from torch import nn
from torch_geometric.nn import SAGEConv, TopKPooling, global_mean_pool


class PoolClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = SAGEConv(16, 32)
        self.pool = TopKPooling(32, ratio=0.5)
        self.lin = nn.Linear(32, 3)

    def forward(self, x, edge_index, batch):
        h = self.conv(x, edge_index).relu()
        h, edge_index, _, batch, _, _ = self.pool(h, edge_index, batch=batch)
        return self.lin(global_mean_pool(h, batch))


def build_model():
    torch.manual_seed(0)
    return PoolClassifier().eval()


def example_inputs():
    torch.manual_seed(0)
    edges = torch.cat([torch.randint(0, 10, (2, 30)), torch.randint(10, 20, (2, 30))], 1)
    return (torch.randn(20, 16), edges, torch.tensor([0] * 10 + [1] * 10))
