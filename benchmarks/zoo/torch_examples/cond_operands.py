"""torch's exportdb example CondOperands (torch/_export/db/examples/cond_operands.py): torch.cond on
a predicate over a dynamic dimension, with its own dynamic shapes (becomes an ONNX If)."""

from torch._export.db.examples import cond_operands as example


def build_model():
    return example.CondOperands()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return example.dynamic_shapes
