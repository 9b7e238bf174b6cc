"""Dimensions declared dynamic that the model's code fixes to one size, on the line that does.

When the model's code forces a dimension to one value (say `x.reshape(2, -1)` of a (batch, 3, 4)
input), torch.export either refuses the dynamic dimension (`Dim.DYNAMIC`, string dims: a
capture error) or specializes it silently (`Dim.AUTO`: the export "works", the ONNX model has a
fixed size). Either way the finding goes on the line of the model's code that fixed the size —
capture records every specialization with its Python stack (`internals.specializations_recorded`)
— naming the input, the dimension, its name in the dynamic-shapes spec and the size, with the
dynamic-shapes factory related. Without a recorded line, on the factory, as before.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.locations import Place, from_traceback, locate
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import Finding, Related

DOCS_URL = "https://pytorch.org/docs/stable/export.html#dynamic-shapes"


def check_dynamic_dims(job: Job) -> None:
    """Warn when dimensions asked to be dynamic came out static."""
    import torch

    requested = count_dynamic(job.target.dynamic_shapes)
    if not requested:
        return
    specs = job.program.graph_signature.input_specs
    user_inputs = {spec.arg.name for spec in specs if spec.kind.name == "USER_INPUT"}
    shapes = []
    dynamic = 0
    for node in job.program.graph.nodes:
        if node.op == "placeholder" and node.name in user_inputs:
            value = node.meta.get("val")
            if isinstance(value, torch.Tensor):
                dynamic += sum(1 for dim in value.shape if isinstance(dim, torch.SymInt))
                shapes.append(f"{node.name}: [{', '.join(str(d) for d in value.shape)}]")
    # A size fixed by a guard may still show as a symbol in the program's inputs (Dim.AUTO):
    # what capture recorded decides first.
    fixed = [dim for dim in specialized_dims(job) if dim.place.location is not None]
    if fixed:
        job.result.findings.extend(Finding(
            code="torch-export", severity="warning", stage="capture", location=dim.place.location,
            related=dim.related(job), source_line=dim.place.source_line, docs_url=DOCS_URL,
            message=(f"{dim.describe()} is declared dynamic, but {dim.where()} to {dim.value}: torch.export "
                     f"specialized it, and the ONNX model only accepts {dim.value} there")) for dim in fixed)
        return
    if dynamic >= requested:
        return
    job.result.findings.append(Finding(
        code="torch-export", severity="warning", stage="capture", location=job.shapes_location or job.fallback,
        source_line=None, docs_url=DOCS_URL,
        message=(f"{requested - dynamic} of the {requested} dimensions declared dynamic came out static: "
                 "the model's code fixes their size, and torch.export specialized them "
                 f"(the exported inputs are {'; '.join(shapes)}). The ONNX model only accepts those sizes.")))


def count_dynamic(shapes: Any) -> int:
    """Dimensions declared dynamic in a dynamic_shapes spec (Dim objects, AUTO/DYNAMIC, names)."""
    import torch

    if shapes is None:
        return 0
    if isinstance(shapes, dict) and all(isinstance(key, int) for key in shapes):
        return sum(1 for value in shapes.values() if _is_dynamic_dim(value, torch))
    if isinstance(shapes, dict):
        return sum(count_dynamic(value) for value in shapes.values())
    if isinstance(shapes, (list, tuple)):
        if shapes and all(not isinstance(v, (dict, list, tuple)) for v in shapes) and any(
                _is_dynamic_dim(v, torch) for v in shapes):
            return sum(1 for value in shapes if _is_dynamic_dim(value, torch))
        return sum(count_dynamic(value) for value in shapes)
    return 0


def _is_dynamic_dim(value: Any, torch: Any) -> bool:
    if value is None or isinstance(value, int):
        return False
    dim_hint = getattr(torch.export, "Dim", None)
    if dim_hint is not None and value in (getattr(dim_hint, "STATIC", object()),):
        return False
    return True


# `L['x'].size()[0]`, `L['kwargs']['mask'].size()[1]`: an input's size as torch's sources name it.
_SIZE_SOURCE = re.compile(r"^L(?P<path>(?:\[[^\]]+\])+)\.size\(\)\[(?P<dim>\d+)\]$")
_KEY = re.compile(r"\['([^']+)'\]|\[(\d+)\]")


@dataclass
class SpecializedDim:
    """An input dimension the model's code fixed to one size while torch.export traced it."""

    input: str  # the input's name ("x")
    dim: int
    name: str | None  # its name in the dynamic-shapes spec ("batch"), when the spec gives one
    value: int
    place: Place  # the line of the model's code that fixed it (the model's definition if none)
    in_library: bool = False  # no line of the workspace on the chain: the library's are related

    def where(self) -> str:
        return "library code fixes it" if self.in_library else "this line fixes it"

    def describe(self) -> str:
        """`x dim 0 (batch)`."""
        return f"`{self.input}` dim {self.dim}" + (f" (`{self.name}`)" if self.name else "")

    def related(self, job: Job) -> list[Related]:
        declared = job.shapes_location
        factory = ([Related(file=declared.file, line=declared.line, column=declared.column,
                            message=f"{self.describe()} is declared dynamic here")] if declared else [])
        return factory + self.place.related


def specialized_dims(job: Job) -> list[SpecializedDim]:
    """The input dimensions capture saw fixed, each on the line that fixed it (first per input
    dimension)."""
    found: dict[tuple[str, int], SpecializedDim] = {}
    for record in job.specializations:
        for source in record.sources:
            match = _SIZE_SOURCE.match(source)
            if match is None:
                continue
            keys = [name or int(index) for name, index in _KEY.findall(match["path"])]
            strings = [key for key in keys if isinstance(key, str) and key not in ("args", "kwargs")]
            name = strings[-1] if strings else f"args[{keys[-1]}]" if keys else "?"
            if isinstance(job.raw_dynamic_shapes, dict) and name not in job.raw_dynamic_shapes:
                continue  # another capture's view of the inputs (strict: `flat_args`)
            dim = int(match["dim"])
            if (name, dim) not in found:
                place = locate(from_traceback(record.stack), job.workspace)
                in_library = place.at_fallback(job.fallback)
                found[(name, dim)] = SpecializedDim(name, dim, _spec_name(job.raw_dynamic_shapes, name, dim),
                                                    record.value, place, in_library)
    return list(found.values())


def relocate_refusal(findings: list[Finding], job: Job) -> list[Finding]:
    """A capture failure that is torch refusing a dynamic dimension the code fixed (`Dim.DYNAMIC`,
    string dims), moved from the model's definition to the line that fixed it."""
    fixed = [dim for dim in specialized_dims(job) if dim.place.location is not None]
    if not fixed:
        return findings
    moved = []
    for finding in findings:
        refusal = any(marker in finding.message for marker in _REFUSALS)
        at_fallback = job.fallback is not None and finding.location is not None and (
            finding.location.file, finding.location.line) == (job.fallback.file, job.fallback.line)
        if not (refusal and at_fallback):
            moved.append(finding)
            continue
        lines = [line.strip().lstrip("- ") for line in finding.message.splitlines()]
        for dim in fixed:
            torch_says = next((line for line in lines if f"['{dim.input}'].shape[{dim.dim}]" in line),
                              next((line for line in lines if any(m in line for m in _REFUSALS[:2])), lines[0]))
            moved.append(Finding(
                code=finding.code, severity=finding.severity, stage=finding.stage, location=dim.place.location,
                related=dim.related(job), source_line=dim.place.source_line, docs_url=DOCS_URL,
                message=(f"{dim.describe()} is declared dynamic, but {dim.where()} to {dim.value}, so "
                         f"torch.export refused to keep it dynamic (torch: {torch_says})")))
    return moved


# How torch.export says it refused a dynamic dimension.
_REFUSALS = ("inferred a static shape", "specialized", "Constraints violated", "conflicts between user-specified ranges")


def _spec_name(spec: Any, name: str, dim: int) -> str | None:
    """The dimension's name in the dynamic-shapes spec: a string dim, or a Dim's name."""
    entry = spec.get(name) if isinstance(spec, dict) else None
    value = entry.get(dim) if isinstance(entry, dict) else (
        entry[dim] if isinstance(entry, (list, tuple)) and dim < len(entry) else None)
    if isinstance(value, str):
        return value
    named = getattr(value, "__name__", None)
    return named if isinstance(named, str) and named not in ("AUTO", "DYNAMIC", "STATIC") else None
