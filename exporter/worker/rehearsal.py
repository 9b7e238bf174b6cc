"""A spare's rehearsal: one whole export of a tiny target of our own, through the calls a job
makes, before the spare says it is ready.

Why: a child forked from the zygote shares the zygote's memory copy-on-write, and whatever the job
touches first costs a page fault and a page copy. `Pipeline.warm_up` (an in-memory export of a
tiny model) already takes capture, decomposition and translation through their code; a job also
imports a workspace file through our loader, reads its source for locations, records the files
it opens, replays and records the kept random fills, checks and saves the .onnx. On the examples'
MLP through the language server, a job in a spare that had only warmed up made ~3,500 minor page
faults in 144 ms of CPU (medians of 22 saves); after this rehearsal, ~700 in 135 ms. The spare
waits for its job anyway: it pays for those pages there (~10 MB more of its own).

What stays for the job is only warm memory: the rehearsal's workspace is own_workspace.py's,
which leaves nothing in the process or on disk. Torch's random generator is the caller's to put
back (child.py: the job must draw what a child forked for it draws).
"""

from __future__ import annotations

import os
from typing import Any

from onnxlens.exporter.types import TargetSpec
from onnxlens.exporter.worker.own_workspace import own_workspace

# The module name is not one a job imports from its workspace by accident: it is unloaded anyway.
MODULE = "_onnxlens_rehearsal"
SOURCE = '''\
import torch


class Rehearsal(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x).relu().softmax(dim=-1)


def example_inputs():
    return (torch.randn(2, 8),)
'''


def rehearse(pipeline: Any) -> str:
    """Export the rehearsal target with `pipeline` (verification off: it runs after the result)
    and forget it; returns the result's status ("ok" unless something is broken)."""
    with own_workspace("rehearsal", {f"{MODULE}.py": SOURCE}) as root:
        spec = TargetSpec(name="rehearsal", root=root, model=f"{MODULE}.py:Rehearsal",
                          inputs=f"{MODULE}.py:example_inputs", output=os.path.join(root, "out", "rehearsal.onnx"),
                          report=os.path.join(root, "out", "rehearsal.md"), verify=False)
        fills_fd = _memory_file()
        try:
            return pipeline.export(spec, kept_fills_fd=fills_fd).result.status
        finally:
            if fills_fd is not None:
                os.close(fills_fd)


def _memory_file() -> int | None:
    """An empty kept-fills file (as the zygote gives a target's first job), or None without memfd."""
    try:
        return os.memfd_create("onnxlens-rehearsal-fills", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
