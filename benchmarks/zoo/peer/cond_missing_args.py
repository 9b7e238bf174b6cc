"""pytorch/pytorch test/dynamo/test_export.py, `ExportTests.test_cond_raise_user_error_on_missing_args`
(BSD-3-Clause): torch.cond called without its operands (the test expects "Expected 4 arguments")."""

import torch
from functorch.experimental.control_flow import cond


def true_fn(x):
    return x.cos()


def false_fn(x):
    return x.sin()


class Module(torch.nn.Module):
    def forward(self, x):
        return cond(x.shape[0] > 10, true_fn, false_fn)


def build_model():
    return Module()


def example_inputs():
    return (torch.rand(5),)
