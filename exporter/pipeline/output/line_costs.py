"""What each line of the user's code costs at inference (ExportResult.cost): onnxruntime's
profile of the verification run (exporter/verify/profiling.py), each kernel's time given to the
line of the node it ran for.

A node's line is the one the line data gives it (lines.NodeLines: the location rule of the
diagnostics, hover and hints), so a line's cost covers the nodes of its hover. A node without a
line (the sizes of the inputs a dynamic shape reads, which torch traces at no line) counts for
the line of the first of its uses that has one (through uses without one): its work is done
for that line. A kernel whose
node leads to no line (or none was found for it) counts apart (`other_us`); with them, the
lines' times add up to the profile's total exactly.

The profile itself is kept beside the report (`<target>.profile.json`, written atomically when
the verification ran): chrome://tracing or Perfetto open it. An extra: a failure here is logged,
the export and its verification stand.
"""

from __future__ import annotations

import os
import time
from typing import Any

import onnx_ir as ir

from onnxlens.exporter import atomic
from onnxlens.exporter.locations import source_line
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.types import InferenceCost, LineCost
from onnxlens.exporter.verify.profiling import Profiler, RuntimeProfile, attribute


def profile_path(job: Job) -> str:
    """Next to the report: `<target>.profile.json`."""
    return os.path.join(os.path.dirname(os.path.abspath(job.spec.report)), f"{job.spec.name}.profile.json")


def record(job: Job, profiler: Profiler) -> None:
    """The result's cost per line from what `profiler` recorded, and the profile on disk."""
    if profiler.profile is None:
        if profiler.error is not None:
            job.log(f"{job.spec.name}: no cost per line: onnxruntime's profile could not be read: {profiler.error}")
        return
    started = time.perf_counter()
    try:
        cost = line_costs(job, profiler.profile)
    except Exception as error:  # noqa: BLE001 - see the module docstring
        job.log(f"{job.spec.name}: no cost per line: {type(error).__name__}: {error}")
        return
    try:
        cost.profile = atomic.write_bytes(profile_path(job), profiler.profile.trace)
    except OSError as error:
        job.log(f"{job.spec.name}: onnxruntime's profile could not be kept: {error}")
    cost.seconds = round(time.perf_counter() - started, 4)
    job.result.cost = cost


def line_costs(job: Job, profile: RuntimeProfile) -> InferenceCost:
    model = job.onnx_program.model
    nodes = {node.name: node for node in ir.traversal.RecursiveGraphIterator(model.graph) if node.name}
    producers = {value.name: node.name for node in nodes.values() for value in node.outputs if value.name}
    attribute(profile, set(nodes), producers)
    cost = InferenceCost(run_us=profile.run_us, kernel_count=len(profile.kernels), threads=profile.threads)
    by_line: dict[tuple[str, int], LineCost] = {}
    line_of = _LineOf(job.node_lines, model) if job.node_lines is not None else None
    for kernel in profile.kernels:
        cost.total_us += kernel.microseconds
        node = nodes.get(kernel.node) if kernel.node is not None else None
        key = line_of(node) if node is not None and line_of is not None else None
        if key is None:
            cost.other_us += kernel.microseconds
            cost.other_kernels[kernel.op] = cost.other_kernels.get(kernel.op, 0) + 1
            continue
        line = by_line.get(key)
        if line is None:
            line = by_line[key] = LineCost(file=key[0], line=key[1], code=(source_line(*key) or "").strip())
        line.microseconds += kernel.microseconds
        line.kernels[kernel.op] = line.kernels.get(kernel.op, 0) + 1
        line.kernel_us[kernel.op] = line.kernel_us.get(kernel.op, 0.0) + kernel.microseconds
    for line in by_line.values():
        line.share = line.microseconds / cost.total_us if cost.total_us else 0.0
    cost.lines = sorted(by_line.values(), key=lambda line: (-line.microseconds, line.file, line.line))
    return cost


class _LineOf:
    """A node's line (NodeLines), else that of the first of its uses that has one, through uses
    without one; None when no line is downstream. Computed once for every node, users first."""

    def __init__(self, node_lines: Any, model: ir.Model) -> None:
        self._lines: dict[ir.Node, tuple[str, int] | None] = {}
        for node in reversed(list(ir.traversal.RecursiveGraphIterator(model.graph))):
            key = node_lines.line(node)
            if key is None:
                key = next((found for value in node.outputs for use in value.uses()
                            if (found := self._lines.get(use.node)) is not None), None)
            self._lines[node] = key

    def __call__(self, node: ir.Node) -> tuple[str, int] | None:
        return self._lines.get(node)
