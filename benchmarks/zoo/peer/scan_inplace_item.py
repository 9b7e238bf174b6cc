"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowScanInplace_153705` (pytorch/pytorch#153705), a scan body that takes `.item()` of the
scanned index and assigns a row in place with it."""

import torch


class ControlFlowScanInplace_153705(torch.nn.Module):
    def forward(self, x, y):
        def loop_body_1(z, iv, x, y):
            z = z.clone()
            i = iv.item()
            z[i, :] = ((x[i, :] - y) ** 2).sum(dim=-1)
            return [z, iv]

        z = torch.empty((x.shape[0], y.shape[0]))
        r = torch.ops.higher_order.scan(
            loop_body_1, [z], [torch.arange(x.shape[0], dtype=torch.int64)], [x, y]
        )
        return r[0]


def build_model():
    return ControlFlowScanInplace_153705()


def example_inputs():
    return (torch.rand((3, 4)), torch.rand((5, 4)))


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return {"x": {0: dyn, 1: dyn}, "y": {0: dyn, 1: dyn}}
