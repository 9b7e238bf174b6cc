"""The zygote's warm-up: torch and the ONNX stack imported, one export of a tiny model, the heap
frozen, so every forked child starts warm.

Runs once, in the zygote, before it serves. The invariants of the zygote hold here: it runs no
user code (the warm-up model is ours, written to a temporary directory and forgotten after) and
torch computes with ONE thread (an OpenMP pool does not survive fork).
"""

from __future__ import annotations

import gc
import os
import sys
from typing import TYPE_CHECKING

from onnxlens.exporter.types import TargetSpec
from onnxlens.exporter.worker.own_workspace import own_workspace

if TYPE_CHECKING:
    from onnxlens.exporter.pipeline import Pipeline

# Covers the ops most models use (linear, norm, attention, activations, a dynamic batch), so
# children do not pay the lazy per-op initialisation of torch.export and the decompositions.
_WARM_UP_MODEL = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.linear = torch.nn.Linear(8, 8)
        self.conv = torch.nn.Conv1d(8, 8, 3, padding=1)

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        x = x + torch.nn.functional.gelu(self.linear(x))
        x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
        return torch.relu(x).softmax(-1)


def inputs():
    return (torch.randn(2, 4, 8),)


def dynamic_shapes():
    return ({0: torch.export.Dim("batch", min=1, max=64)},)
'''


def warm_pipeline() -> Pipeline:
    """Import everything a job needs and run one tiny export, so children start warm."""
    import torch

    torch.set_num_threads(1)
    import onnx  # noqa: F401 - imported here so that no child pays for it
    import onnxruntime  # noqa: F401
    import onnxscript  # noqa: F401
    import torch.onnx  # noqa: F401

    from onnxlens.exporter.pipeline import Pipeline

    pipeline = Pipeline()
    pipeline.warm_up()  # the pipeline's own: its tables
    _warm_up_export(pipeline)  # every stage once, verification and report included
    stop_tqdm_monitor()
    ready_to_fork()
    return pipeline


def ready_to_fork() -> None:
    """After the zygote loaded modules (warm-up, library preloading): what it holds now is
    library code (children skip it when they look for the user's modules), and the heap is
    frozen (gc.freeze: fewer copy-on-write pages in children)."""
    from onnxlens.exporter.pipeline.target.code import remember_zygote_modules  # imports torch: not at module import

    remember_zygote_modules()
    gc.collect()
    gc.freeze()


def stop_tqdm_monitor() -> None:
    """tqdm (used by libraries during the warm-up) leaves a monitor thread; a thread holding a
    lock at fork time would leave that lock held forever in the child."""
    tqdm = sys.modules.get("tqdm")
    if tqdm is None:
        return
    tqdm.tqdm.monitor_interval = 0
    monitor = getattr(tqdm.tqdm, "monitor", None)
    if monitor is not None:
        monitor.exit()
        monitor.join(timeout=5)
        tqdm.tqdm.monitor = None


def _warm_up_export(pipeline: Pipeline) -> None:
    """A real export of a tiny model through the pipeline (the first export in a process pays
    for lazy initialisation). Leaves nothing of the model behind: not a module, not a file
    (own_workspace.py)."""
    with own_workspace("warmup", {"onnxlens_warmup_model.py": _WARM_UP_MODEL}) as directory:
        spec = TargetSpec(
            name="warm-up", root=directory, model="onnxlens_warmup_model.py:Tiny",
            inputs="onnxlens_warmup_model.py:inputs",
            dynamic_shapes="onnxlens_warmup_model.py:dynamic_shapes",
            output=os.path.join(directory, "out", "warm-up.onnx"),
            report=os.path.join(directory, "out", "warm-up.md"),
        )
        result = pipeline.run(spec, lambda event: None)
        if result.status != "ok":
            print(f"onnxlens: the worker's warm-up export failed: {result.findings}", file=sys.stderr)
