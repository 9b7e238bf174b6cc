"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowWhileDec`, a torch while_loop counting down, body `x + y`, with the case's own
dynamic shapes (x: both dimensions `Dim.DYNAMIC`, y: only the first)."""

import torch


class ControlFlowWhileDec(torch.nn.Module):
    def forward(self, ci, a, b):
        def cond_fn(i, x, y):
            return i > 0

        def body_fn(i, x, y):
            return i - 1, x + y, y - x

        return torch._higher_order_ops.while_loop(cond_fn, body_fn, [ci, a, b])


def build_model():
    return ControlFlowWhileDec()


def example_inputs():
    return (torch.tensor(1), torch.randn(2, 3), torch.randn(2, 3))


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return {}, {0: dyn, 1: dyn}, {0: dyn}
