"""The pipeline's stages, one module each with `run(job)` over the typed `Job` (pipeline/job.py):
load, capture, decompose, scan, translate, optimize, check, save, verify, and public_export (the
public path's one stage, for a torch without an adapter). Their names and order are
types.STAGES's; pipeline/__init__.py builds the stage table from them.

Stages import the wings (failures/, untranslatable/, tracing/, output/, target/, and
exporter/verify/, exporter/proposals/); no wing imports a stage (tests/test_layout.py).
"""
