"""Trace values left in the model's state: a constant of the exported program that is a fake
tensor, with the lines that stored it and the lines that use it.

A model that caches a value it computes in forward (`self.register_buffer("bias", bias,
persistent=False)` when the cached one is too small) stores, while torch.export traces it, the
trace's fake tensor. When that capture fails and the stock exporter retries it (with
torch.export's suggested fixes for the dynamic shapes), the retry reads the cache instead of
computing it, and the fake tensor becomes a constant of the graph. Nothing fails until the
optimizer folds constants (`.numpy() is not supported for tensor subclasses`), with no line of
the model on the traceback. The program says which constant it is and which nodes use it;
capture recorded where it was stored (`internals.traced_tensors_stored`).
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.locations import Frame, from_stack_trace, from_traceback, locate
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import full_stack_trace
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Related


def fake_constants(program: Any) -> dict[str, Any]:
    """The program's state entries (buffers, constants) whose value is a fake tensor, by name."""
    if program is None:
        return {}
    state = {**program.state_dict, **program.constants}
    return {name: value for name, value in state.items() if _is_fake(value)}


def explain(job: Job, finding: Finding) -> None:
    """Add to `finding` (a failure past capture) what a fake constant of the program explains:
    its name, the lines that use it and the lines that stored it, as related locations."""
    leaked = fake_constants(job.program)
    if not leaked:
        return
    related: list[Related] = []
    for name in leaked:
        for frames, note in [*_uses(job, name), *_stores(job, name)]:
            place = locate(frames, job.workspace)
            if place.location is not None:
                chain = [Related(file=place.location.file, line=place.location.line, message=note,
                                 column=place.location.column), *place.related]
            else:  # library code: its innermost frame is the one that uses or stores it
                chain = place.related[:1] and [Related(**{**place.related[0].to_dict(),
                                                          "message": f"{note} ({place.related[0].message})"})]
                chain += place.related[1:]
            related.extend(entry for entry in chain if (entry.file, entry.line) not in
                           {(known.file, known.line) for known in [*finding.related, *related]})
    names = ", ".join(f"`{name}`" for name in leaked)
    finding.message += (
        f"\nThe graph holds {names} as a constant whose value is a tensor of torch.export's trace, not "
        "data: the model stored a value computed while it was traced in its own state (a cache filled "
        "in forward), and the capture that was kept read it back. Compute it in __init__ (or keep it "
        "out of the module's state), so that every trace computes it.")
    finding.related = finding.related + related


def _uses(job: Job, name: str) -> list[tuple[list[Frame], str]]:
    """The call chains of the nodes that read the constant `name`."""
    signature = job.program.graph_signature
    placeholders = {**signature.inputs_to_buffers, **signature.inputs_to_lifted_tensor_constants}
    chains = []
    for node in job.program.graph.nodes:
        if node.op == "placeholder" and placeholders.get(node.name) == name:
            for user in node.users:
                frames = from_stack_trace(full_stack_trace(user))
                if frames:
                    chains.append((frames, f"uses `{name}`"))
    return chains


def _stores(job: Job, name: str) -> list[tuple[list[Frame], str]]:
    """The call chains that stored a trace value where the constant `name` is kept."""
    path, _, attribute = name.rpartition(".")
    try:
        owner = job.target.model.get_submodule(path) if path else job.target.model
    except (AttributeError, TypeError):
        return []
    return [(from_traceback(stored.stack), f"stores a traced value in `{name}` here")
            for stored in job.stored_tensors
            if issubclass(stored.module_class, type(owner)) and stored.name == attribute]


def _is_fake(value: Any) -> bool:
    try:
        return internals.is_fake(value)
    except Exception:  # noqa: BLE001 - not a tensor torch can tell about
        return False


