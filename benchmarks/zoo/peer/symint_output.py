"""pytorch/pytorch test/export/test_export.py, `TestExport.test_symint_output` (BSD-3-Clause):
forward returns a tensor and a symbolic size, both dimensions named dynamic."""

import torch


class Foo(torch.nn.Module):
    def forward(self, x):
        z, y = x.size()
        return z + y + x[0], z


def build_model():
    return Foo()


def example_inputs():
    return (torch.ones(2, 3),)


def dynamic_shapes():
    dim0_x, dim1_x = torch.export.dims("dim0_x", "dim1_x")
    return {"x": (dim0_x, dim1_x)}
