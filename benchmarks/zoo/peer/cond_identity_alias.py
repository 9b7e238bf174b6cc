"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowCondIdentity_153832` (pytorch/pytorch#153832), a torch.cond whose else branch returns
its input unchanged ("fails but succeeds with x.clone()")."""

import torch


class ControlFlowCondIdentity_153832(torch.nn.Module):
    def forward(self, x, y):
        def branch_cond_then_1(x):
            x = torch.abs(x) + 1
            return x

        def branch_cond_else_1(x):
            return x  # fails but succeeds with x.clone()

        x = torch.cond(x.sum() > 0, branch_cond_then_1, branch_cond_else_1, [x])
        return x + y


def build_model():
    return ControlFlowCondIdentity_153832()


def example_inputs():
    return (torch.rand((3, 4)), torch.rand((3, 4)))


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return {"x": {0: dyn, 1: dyn}, "y": {0: dyn, 1: dyn}}
