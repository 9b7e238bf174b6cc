"""pytorch/pytorch test/dynamo/test_export.py,
`ExportTests.test_cond_raise_user_error_on_unsupported_pred` (BSD-3-Clause): torch.cond given an
nn.Module as its predicate (the test expects "Expected pred to be bool/int or a tensor")."""

import torch
from functorch.experimental.control_flow import cond


class Module(torch.nn.Module):
    def forward(self, x):
        pred = torch.nn.Module()
        return cond(pred, lambda x: x.sin(), lambda x: x.cos(), [x])


def build_model():
    return Module()


def example_inputs():
    return (torch.rand(5),)
