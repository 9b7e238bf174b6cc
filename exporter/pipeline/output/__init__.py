"""A wing of the pipeline: what an export produces besides the findings — the report and program
dump, the source paths in the saved .onnx, the graph-only model, the graph in brief, what each
line became and what it costs.

Imports no stage (pipeline/stages/; tests/test_layout.py).
"""
