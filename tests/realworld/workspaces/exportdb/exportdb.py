"""torch's own ExportDB examples as targets: the model code ships inside torch."""

import importlib


def _example(name):
    return importlib.import_module(f"torch._export.db.examples.{name}")


def map_model():
    return _example("dynamic_shape_map").model


def map_inputs():
    return _example("dynamic_shape_map").example_args


def round_model():
    return _example("dynamic_shape_round").model


def round_inputs():
    return _example("dynamic_shape_round").example_args


def round_shapes():
    return _example("dynamic_shape_round").dynamic_shapes
