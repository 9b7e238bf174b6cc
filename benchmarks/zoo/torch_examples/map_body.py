"""torch's exportdb example DynamicShapeMap (torch/_export/db/examples/dynamic_shape_map.py):
functorch's control_flow.map (the torch.map higher-order op) over the first dimension."""

from torch._export.db.examples import dynamic_shape_map as example


def build_model():
    return example.DynamicShapeMap()


def example_inputs():
    return example.example_args
