"""pytorch/pytorch test/onnx/test_pytorch_onnx_onnxruntime.py, `TestONNXRuntime.test_bitshift_uint8`
(BSD-3-Clause): the same shifts on uint8 inputs, the tensor shift on the second input."""

import torch


class BitshiftModel(torch.nn.Module):
    def forward(self, input, input2):
        return (
            input >> 1,
            input << 3,
            input2 >> torch.tensor([1, 2], dtype=torch.uint8),
            input2 << 4,
        )


def build_model():
    return BitshiftModel()


def example_inputs():
    return (
        torch.arange(24, dtype=torch.uint8).reshape(3, 4, 2),
        torch.arange(24, dtype=torch.uint8).reshape(3, 4, 2),
    )
