"""pytorch/pytorch test/dynamo/test_export.py, `ExportTests.test_constraint_violation_error_messages`
(BSD-3-Clause), its `Bar`: `if x.shape[0] == 5:` with the first dimension declared
`Dim("dim0", min=3, max=8)`. torch.export refuses ("You marked ... but your code specialized it to
be a constant"); torch.onnx.export retries with the suggested fix (dim0 = 5)."""

import torch


class Bar(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] == 5:
            return x + 1
        else:
            return x + 2


def build_model():
    return Bar()


def example_inputs():
    return (torch.zeros([5]),)


def dynamic_shapes():
    return {"x": (torch.export.Dim("dim0", min=3, max=8),)}
