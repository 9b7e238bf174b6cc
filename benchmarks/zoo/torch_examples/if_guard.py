"""torch's exportdb example DynamicShapeIfGuard (torch/_export/db/examples/dynamic_shape_if_guard.py):
`if x.shape[0] == 3` in forward, exported with the first dimension declared dynamic (as a user who
wants any batch size would)."""

from torch._export.db.examples import dynamic_shape_if_guard as example
from torch.export import Dim


def build_model():
    return example.DynamicShapeIfGuard()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return {"x": {0: Dim("batch")}}
