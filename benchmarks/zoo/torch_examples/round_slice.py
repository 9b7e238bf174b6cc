"""torch's exportdb example DynamicShapeRound (torch/_export/db/examples/dynamic_shape_round.py):
`x[: round(x.shape[0] / 2)]` with a dynamic first dimension. The model's code lives inside torch."""

from torch._export.db.examples import dynamic_shape_round as example


def build_model():
    return example.DynamicShapeRound()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return example.dynamic_shapes
