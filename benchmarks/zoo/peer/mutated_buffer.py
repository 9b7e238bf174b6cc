"""pytorch/pytorch test/export/test_passes.py, `TestPasses.test_functionalization_with_mutated_buffer`
(BSD-3-Clause): a buffer mutated in place in forward (`self.buf.add_(5)`), the first dimension of
the input dynamic with a lower bound of 3."""

import torch

buf = torch.ones(6, 2)
weight = 0.01
bias = 0.2
d_in = 3
d_out = 4


class Foo(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("buf", buf)

        self.linear = torch.nn.Linear(d_in, d_out)
        self.linear.weight.data.fill_(weight)
        self.linear.bias.data.fill_(bias)

    def forward(self, x):
        self.buf.add_(5)
        return self.linear(x).cos() + self.buf.sum()


def build_model():
    return Foo()


def example_inputs():
    return (torch.ones(4, 3),)


def dynamic_shapes():
    return {"x": {0: torch.export.Dim("x0", min=3)}}
