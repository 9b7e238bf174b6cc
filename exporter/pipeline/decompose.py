"""The decompose stage: the captured program run through the ONNX-friendly decompositions.

As `_core._prepare_exported_program_for_export` does it, with the decomposition tables built
once per process (tables.py). Afterwards each node's stack_trace is put back to the stock one
(stacks.py): the stack_trace that reaches translation is the stock one (byte identity).
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.cia_override import recorded_override
from onnxlens.exporter.pipeline.errors import fail_on
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.stacks import restore_stock_traces


def run(job: Job) -> None:
    try:
        job.decomposed = decompose(job.program, job.tables.decompositions(job.registry, job.custom_key))
        restore_stock_traces(job.decomposed, job.anchors)
    except Exception as error:  # noqa: BLE001 - any decomposition failure is a finding
        fail_on(job, error, "decomposition", "decomposing the exported program failed")


def decompose(program: Any, tables: Any) -> Any:
    """`_core._prepare_exported_program_for_export`, with the decomposition tables given."""
    import torch
    from torch.export import exported_program as _exported_program
    from torch.onnx._internal.exporter import _fx_passes

    def run_decompositions() -> Any:
        return _exported_program._decompose_exported_program(
            program, cia_to_decomp=tables.cia_to_decomp, python_decomp_table=tables.python_decomp_table,
            joint_loss_index=None, decompose_custom_triton_ops=False)

    with torch.fx.experimental._config.patch(backed_size_oblivious=True), recorded_override(tables.recorded_override):
        decomposed = _exported_program._disable_prexisiting_fake_mode(run_decompositions)()
        graph_module = decomposed.graph_module
        _fx_passes.insert_type_promotion_nodes(graph_module)
        graph_module = _fx_passes.remove_assertion_nodes(graph_module)
        decomposed._graph_module = graph_module
    return decomposed
