"""ExportDB's DynamicShapeView (torch/_export/db/examples/dynamic_shape_view.py, inside torch)
exported with both dimensions declared `Dim.DYNAMIC`. Its `x.view(*x.size()[:-1] + (2, 5))`
needs the last dimension to be exactly 10."""

import torch
from torch._export.db.examples import dynamic_shape_view as example


def build_model():
    return example.DynamicShapeView()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return {"x": {0: torch.export.Dim.DYNAMIC, 1: torch.export.Dim.DYNAMIC}}
