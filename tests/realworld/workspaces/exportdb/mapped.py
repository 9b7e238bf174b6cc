"""The same two constructs in the user's own code: functorch's map and round() over a dynamic size."""

import torch
from functorch.experimental.control_flow import map
from torch.export import Dim


def half(x):
    return x[: round(x.shape[0] / 2)]


class Mapped(torch.nn.Module):
    def forward(self, xs, y):
        def body(x, y):
            return x + y

        mapped = map(body, xs, y)
        return half(mapped)


def build_model():
    return Mapped()


def example_inputs():
    return (torch.randn(3, 2), torch.randn(2))


def dynamic_shapes():
    return {"xs": {0: Dim("n")}, "y": None}
