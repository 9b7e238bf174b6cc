"""onnx-diagnostic, onnx_diagnostic/torch_export_patches/eval/model_cases.py (MIT):
`ControlFlowScan2Carried`, a scan with two carries whose body returns each carry again as a scanned
output."""

import torch


class ControlFlowScan2Carried(torch.nn.Module):
    @staticmethod
    def add(carry1: torch.Tensor, carry2: torch.Tensor, y1: torch.Tensor, y2: torch.Tensor):
        next_carry1 = carry1 + y1
        next_carry2 = carry2 * y2
        return [next_carry1, next_carry2, next_carry1, next_carry2]

    def forward(self, x):
        init1 = torch.zeros_like(x[0])
        init2 = torch.ones_like(x[0])
        carry1, carry2, out1, out2 = torch.ops.higher_order.scan(
            ControlFlowScan2Carried.add,
            [init1, init2],
            [x, x * 2],
            additional_inputs=[],
        )
        return carry1, carry2, out1, out2


def build_model():
    return ControlFlowScan2Carried()


def example_inputs():
    return (torch.tensor([[1, 2, 3, -1], [4, 5, 6, -1], [7, 8, 9, -1]], dtype=torch.float32),)


def dynamic_shapes():
    return {"x": {0: torch.export.Dim("batch")}}
