"""pytorch/pytorch test/export/test_serialize.py, `TestSerialize.test_serialize_constant_outputs`
(BSD-3-Clause): forward returns a tensor, None and a Python int ("Although these outputs aren't very
useful, they do show up in graphs")."""

import torch


class MyModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x):
        # Along with tensor output, return Nonetype
        # and constant. Although these outputs aren't
        # very useful, they do show up in graphs.
        return x + 1, None, 1024


def build_model():
    return MyModule()


def example_inputs():
    return (torch.ones(10),)
