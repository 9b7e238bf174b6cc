"""torch's exportdb example ScalarOutput (torch/_export/db/examples/scalar_output.py): forward returns
`x.shape[1] + 1`, a symbolic int, not a tensor, with its own dynamic shapes."""

from torch._export.db.examples import scalar_output as example


def build_model():
    return example.ScalarOutput()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return example.dynamic_shapes
