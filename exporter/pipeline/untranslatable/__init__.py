"""A wing of the pipeline: what the translation to ONNX cannot take, as findings — ops without a
translation (checked while capture traces them, and by the scan), and values the model returns
that cannot be ONNX outputs (where they are built and returned, the fixes the code holds).

Builds on failures/ (the exception-chain walker, errors on FX nodes); failures/ does not import
this wing. Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
