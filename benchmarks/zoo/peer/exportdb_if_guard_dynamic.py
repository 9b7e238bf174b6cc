"""ExportDB's DynamicShapeIfGuard (torch/_export/db/examples/dynamic_shape_if_guard.py, inside
torch) exported with its first dimension declared `Dim.DYNAMIC`, as a user who wants any batch
size writes it. The model's `if x.shape[0] == 3:` pins the dimension; `Dim.DYNAMIC` forbids that."""

import torch
from torch._export.db.examples import dynamic_shape_if_guard as example


def build_model():
    return example.DynamicShapeIfGuard()


def example_inputs():
    return example.example_args


def dynamic_shapes():
    return {"x": {0: torch.export.Dim.DYNAMIC}}
