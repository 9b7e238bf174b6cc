"""A graph classifier: two GATConv layers and torch_geometric's global_mean_pool readout over a
batch of two graphs (the `batch` vector maps each node to its graph)."""

import torch
from torch import nn
from torch.nn import functional as F
from torch_geometric.nn import GATConv, global_mean_pool


class GraphClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = GATConv(16, 8, heads=4)
        self.conv2 = GATConv(32, 32, heads=1)
        self.lin = nn.Linear(32, 3)

    def forward(self, x, edge_index, batch):
        h = F.elu(self.conv1(x, edge_index))
        h = F.elu(self.conv2(h, edge_index))
        return self.lin(global_mean_pool(h, batch))


def build_model():
    torch.manual_seed(0)
    return GraphClassifier().eval()


def example_inputs():
    torch.manual_seed(0)
    edges = torch.cat([torch.randint(0, 10, (2, 30)), torch.randint(10, 20, (2, 30))], 1)
    return (torch.randn(20, 16), edges, torch.tensor([0] * 10 + [1] * 10))
