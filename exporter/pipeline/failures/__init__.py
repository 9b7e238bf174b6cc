"""A wing of the pipeline: a failure as findings on the user's lines — exceptions a stage
caught (on the FX node they are about, else where they were raised), the FX node an error is
about, capture's failures (every strategy's, the problems past the first, the bodies of
higher-order ops, symbolic arguments, dynamic dimensions the code contradicts, inputs that do
not fit the model).

What has no ONNX form (ops without a translation, values that cannot be outputs) is the wing
beside it, untranslatable/, which imports this one; this one imports it not.

Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
