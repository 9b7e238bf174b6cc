"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT): `ControlFlowScan`,
a scan whose body returns the same tensor as the carry and as the scanned output."""

import torch


class ControlFlowScan(torch.nn.Module):
    @staticmethod
    def add(carry: torch.Tensor, y: torch.Tensor):
        next_carry = carry + y
        return [next_carry, next_carry]

    def forward(self, x):
        init = torch.zeros_like(x[0])
        carry, _out = torch.ops.higher_order.scan(
            ControlFlowScan.add, [init], [x], additional_inputs=[]
        )
        return carry


def build_model():
    return ControlFlowScan()


def example_inputs():
    return (torch.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9]], dtype=torch.float32),)


def dynamic_shapes():
    return {"x": {0: torch.export.Dim("batch")}}
