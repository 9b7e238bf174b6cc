"""onnxruntime's profiler on the verification run: each kernel's time, and the node of the
exported model it ran for.

onnxruntime optimizes the graph before it runs it (ORT_ENABLE_ALL: fused kernels such as
SkipLayerNormalization, BiasGelu or FusedMatMul replace several nodes), and its profile names the
kernels of the graph it ran. So the profiled session also saves that optimized graph
(`optimized_model_filepath`) with its initializers' data sent to /dev/null (the external-data
file it writes is a symlink there: only the graph's structure is read back, and nothing of the
weights' size is written). A kernel whose node the exported model has ran for that node; a
kernel onnxruntime made ran for the node whose value it computes: its output keeps that value's
name (a fused kernel computes the value of the last node it replaced); an output onnxruntime
named anew is followed to the first value downstream the exported model has.

A control-flow node's time includes its bodies' kernels, which the profile lists as well: only
the kernels of the main graph count, each once.

Only the first session (the verification run) is profiled: the divergence search's session and
the second-shape check are not. What it costs is measured in benchmarks/PROFILE_COST.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections import deque
from dataclasses import dataclass, field
from typing import Any

KERNEL_SUFFIX = "_kernel_time"
_OPTIMIZED = "optimized.onnx"
_DISCARDED = "discarded.data"  # a symlink to /dev/null: the optimized graph's weights go nowhere


@dataclass
class Kernel:
    """One kernel of the profiled run."""

    name: str  # its node's name in the graph onnxruntime ran
    op: str  # its op type as onnxruntime ran it ("MatMul", "SkipLayerNormalization")
    microseconds: float
    node: str | None = None  # the exported model's node it ran for (`attribute`); None: none found


@dataclass
class RanGraph:
    """The graph onnxruntime ran (main graph only): each node's inputs and outputs by name."""

    outputs: dict[str, list[str]] = field(default_factory=dict)  # node name -> output names
    consumers: dict[str, list[str]] = field(default_factory=dict)  # value name -> consuming nodes' names


@dataclass
class RuntimeProfile:
    """What the profiled run gave: its kernels (main graph), the run's own time and the profile."""

    kernels: list[Kernel] = field(default_factory=list)
    run_us: float = 0.0
    threads: int = 1
    trace: bytes = b""  # onnxruntime's profile as it wrote it (JSON)
    graph: RanGraph = field(default_factory=RanGraph)


class Profiler:
    """Turns profiling on for one session (`configure`, before it is created) and reads what it
    recorded (`collect`, after its run). `profile` is None until then, `error` says why when
    reading it failed. Its temporary directory exists from `configure` to `collect` or
    `discard`."""

    def __init__(self) -> None:
        self.directory: str | None = None
        self.profile: RuntimeProfile | None = None
        self.error: str | None = None
        self.threads = 1

    def configure(self, options: Any) -> None:
        self.directory = tempfile.mkdtemp(prefix="onnxlens-profile-")
        options.enable_profiling = True
        options.profile_file_prefix = os.path.join(self.directory, "profile")
        discarded = os.path.join(self.directory, _DISCARDED)
        with contextlib.suppress(OSError):  # without /dev/null the weights are written, and removed after
            os.symlink(os.devnull, discarded)
        options.optimized_model_filepath = os.path.join(self.directory, _OPTIMIZED)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", _DISCARDED)
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1")
        self.threads = max(1, options.intra_op_num_threads or 1)

    def collect(self, session: Any) -> None:
        """Read the profile of the session's run (it ends the session's profiling)."""
        if self.directory is None:
            self.error = "no session was profiled"
            return
        try:
            path = session.end_profiling()
            with open(path, "rb") as file:
                trace = file.read()
            self.profile = _profile(trace, _graph(os.path.join(self.directory, _OPTIMIZED)), self.threads)
        except Exception as error:  # noqa: BLE001 - the profile is an extra: the verification stands
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.discard()

    def discard(self) -> None:
        """Remove the temporary directory (after `collect`, or when the session could not run)."""
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def _graph(path: str) -> RanGraph:
    import onnx

    model = onnx.load(path, load_external_data=False)
    graph = RanGraph()
    for node in model.graph.node:
        graph.outputs[node.name] = [name for name in node.output if name]
        for name in node.input:
            if name:
                graph.consumers.setdefault(name, []).append(node.name)
    return graph


def _profile(trace: bytes, graph: RanGraph, threads: int) -> RuntimeProfile:
    profile = RuntimeProfile(trace=trace, threads=threads, graph=graph)
    for event in json.loads(trace):
        name = event.get("name", "")
        if event.get("cat") == "Session" and name == "model_run":
            profile.run_us += float(event.get("dur", 0))
        elif event.get("cat") == "Node" and name.endswith(KERNEL_SUFFIX):
            node = name[:-len(KERNEL_SUFFIX)]
            if node in graph.outputs:  # (a control-flow body's kernels are in their node's time)
                op = (event.get("args") or {}).get("op_name", "?")
                profile.kernels.append(Kernel(node, op, float(event.get("dur", 0))))
    return profile


def attribute(profile: RuntimeProfile, node_names: set[str], producers: dict[str, str]) -> None:
    """Set each kernel's `node`: the exported model's node it ran for. `node_names`: the exported
    model's node names; `producers`: value name -> the name of the node that computes it."""
    for kernel in profile.kernels:
        if kernel.name in node_names:
            kernel.node = kernel.name
            continue
        kernel.node = _computed(kernel.name, profile.graph, producers)


def _computed(node: str, graph: RanGraph, producers: dict[str, str]) -> str | None:
    """The exported node whose value a kernel onnxruntime made computes: its outputs' names,
    then, breadth first, those of the nodes that consume them."""
    queue, seen = deque([node]), {node}
    while queue:
        current = queue.popleft()
        for value in graph.outputs.get(current, []):
            if value in producers:
                return producers[value]
        for value in graph.outputs.get(current, []):
            for consumer in graph.consumers.get(value, []):
                if consumer not in seen:
                    seen.add(consumer)
                    queue.append(consumer)
    return None
