"""A wing of the pipeline: the findings a stage reports, made from what failed — errors a stage
caught, FX nodes that failed, unsupported ops, the bodies of higher-order ops, problems past the
first, symbolic arguments, dynamic dimensions, mistakes in the inputs, what the model returns.

Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
