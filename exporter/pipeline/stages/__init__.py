"""The pipeline's stages, one module each with `run(job)` over the typed `Job` (pipeline/job.py):
load, capture, decompose, scan, translate, optimize, check, save, verify, and public_export (the
public path's one stage, for a torch without an adapter). Their names and order are
types.STAGES's; pipeline/__init__.py builds the stage table from them.

Each is a thin orchestration of the wings it imports (failures/, untranslatable/, tracing/,
output/, target/, and exporter/verify/, exporter/proposals/): only pipeline/__init__.py imports
a stage, never a wing or another stage (tests/test_layout.py). What two stages share is a wing's.
"""
