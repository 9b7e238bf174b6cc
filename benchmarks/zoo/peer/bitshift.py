"""pytorch/pytorch test/onnx/test_pytorch_onnx_onnxruntime.py, `TestONNXRuntime.test_bitshift`
(BSD-3-Clause): four shifts in one forward; two by a Python int, one by a tensor."""

import torch


class BitshiftModel(torch.nn.Module):
    def forward(self, input):
        return (
            input >> 1,
            input << 3,
            input >> torch.tensor([1, 2]),
            input << 4,
        )


def build_model():
    return BitshiftModel()


def example_inputs():
    return (torch.arange(24, dtype=torch.int64).reshape(3, 4, 2),)
