"""pytorch/pytorch test/export/test_draft_export.py, `TestDraftExport.test_shape_failure`
(BSD-3-Clause): `assert a.shape[0] == 3` with the first dimension declared `Dim("a0")`; draft export
reports one CONSTRAINT_VIOLATION_ERROR. torch.onnx.export retries with the suggested fix."""

import torch
from torch.export import Dim


class M(torch.nn.Module):
    def forward(self, a):
        assert a.shape[0] == 3
        return a * a


def build_model():
    return M()


def example_inputs():
    return (torch.ones(3, 3),)


def dynamic_shapes():
    return {"a": {0: Dim("a0")}}
