"""pytorch/pytorch test/export/test_export.py, `TestExport.test_no_tensor_computation`
(BSD-3-Clause): forward returns its Python int input; torch.export's graph returns the constant
(`return (1,)`)."""

import torch


class Module(torch.nn.Module):
    def forward(self, x, y):
        return y


def build_model():
    return Module()


def example_inputs():
    return ([torch.ones(1, 3)], 1)
