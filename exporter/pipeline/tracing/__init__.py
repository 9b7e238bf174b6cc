"""A wing of the pipeline: what a trace records — the capture strategies tried in turn (each
failure kept), the stacks of FX nodes, the user call an op came from, the tensor state around a
traced call, the values each line produced.

Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
