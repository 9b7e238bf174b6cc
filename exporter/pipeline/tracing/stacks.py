"""Stack traces through helper functions, the user's and the libraries', without changing the
exported ONNX.

Non-strict capture (the exporter's first choice) records, for each FX node, only the frames of
functions named `forward` (plus, from torch 2.13, registered "anchors"): an op called in a
helper function is blamed on forward's call of the helper. That loses the user's helpers, and a
library's: kornia's `find_homography_dlt` reaches `torch.linalg.svd` through three helpers, none
named `forward`. While capturing, the tracer also keeps every frame that is not torch's own
(files.classify: the user's code and library code), so the trace reaches the innermost frame
that called the op. How the tracer is told differs between torch releases (2.13 keeps an anchor
set, 2.12 only a filter method): the adapter of torch's internals does it
(`internals.stack_frames_kept`), given the rule here (`_HelperFrameRule`).

Why a predicate rather than registering each function as an anchor: torch extracts the whole
Python stack for every node anyway and only filters it, so deciding per frame costs one dict
lookup, and nothing has to be collected up front (a library imports modules lazily while the
model runs; transformers does). Measured on a 2-layer BERT and a kornia homography model: within
the noise of plain `torch.export` (ratio 1.00-1.01, 15 runs each).

Frames of the caller of the export (onnxlens, or a test harness) are on every node's stack:
the functions on the stack when capture starts are never kept.

The stack traces end up in the ONNX model's metadata, which must stay byte-identical to the
public API's: the stack_trace that reaches translation is the stock one. So after decomposition
each node's trace is put back to the stock form (the extra frames removed) and the full one is
kept in `node.meta[FULL_TRACE]` for our own use (findings, line info, verification). Strict
(dynamo) capture records helper frames by itself: nothing to restore there.
"""

from __future__ import annotations

import contextlib
import re
import sys
from typing import Any, Iterator

from onnxlens.exporter.locations import FULL_TRACE, Origin, Workspace, classify, node_trace
from onnxlens.exporter.torch_internals.active import internals

_FRAME_START = re.compile(r'^  File "(?P<file>.+?)", line \d+, in (?P<func>.+)$', re.MULTILINE)

__all__ = ["FULL_TRACE", "HelperFrames", "frame_chunks", "full_stack_trace", "full_traces", "graph_modules",
           "helper_frames_kept", "restore_stock_traces", "stock_trace"]


class HelperFrames:
    """The frames a capture kept that stock capture would have dropped, as (file, function).

    Only those are taken out again: a trace may hold frames no capture filter chose (a pass of
    torch's writes `File "torch/fx/passes/runtime_assert.py", line 24, in
    insert_deferred_runtime_asserts` itself), and those must stay as they are.
    """

    def __init__(self) -> None:
        self.added: set[tuple[str, str]] = set()

    def is_stock(self, file: str, func: str) -> bool:
        return (file, func) not in self.added


class _HelperFrameRule:
    """Whether capture keeps a frame (file, function) that torch's own rule drops: yes when the
    frame is not torch's own code (and not a caller of the export). torch asks only about frames
    its own rule has not kept already (not `forward`, not torch/__init__.py, not an anchor it
    registered), so every "yes" is a frame we added (`kept.added`)."""

    def __init__(self, workspace: Workspace, callers: set[tuple[str, str]], kept: HelperFrames) -> None:
        self._workspace = workspace
        self._callers = callers
        self._decided: dict[tuple[str, str], bool] = {}
        self._added = kept.added

    def __call__(self, file: str, func: str) -> bool:
        key = (file, func)
        decided = self._decided.get(key)
        if decided is None:
            decided = key not in self._callers and classify(file, self._workspace) is not Origin.INTERNAL
            if decided:
                self._added.add(key)
            self._decided[key] = decided
        return decided


@contextlib.contextmanager
def helper_frames_kept(workspace: Workspace) -> Iterator[HelperFrames | None]:
    """While active, non-strict capture records the frames of every function that is not torch's
    own. Yields what stock capture would have kept (for `restore_stock_traces`); None when the
    adapter cannot keep them (helper frames stay lost, forward's line is still right)."""
    callers = set()
    frame = sys._getframe(1)
    while frame is not None:
        callers.add((frame.f_code.co_filename, frame.f_code.co_name))
        frame = frame.f_back
    kept = HelperFrames()
    with internals.stack_frames_kept(_HelperFrameRule(workspace, callers, kept)) as kept_by_torch:
        yield kept if kept_by_torch else None


def restore_stock_traces(program: Any, kept: HelperFrames | None) -> None:
    """Give every node the stack trace stock capture would have recorded; keep ours aside."""
    if kept is None or not kept.added:
        return
    for module in graph_modules(program):
        for node in module.graph.nodes:
            trace = node.meta.get("stack_trace")
            if not trace:
                continue
            stock = stock_trace(trace, kept)
            if stock == trace:
                continue
            node.meta[FULL_TRACE] = trace
            if stock:
                node.meta["stack_trace"] = stock
            else:  # stock records no trace at all when no frame passes its filter
                del node.meta["stack_trace"]


def stock_trace(trace: str, kept: HelperFrames) -> str:
    """`trace` without the frames only our capture kept.

    The tracer stores `"".join(StackSummary.format()).strip()`: frames of `  File "...", line N,
    in func` plus indented code and caret lines. Cutting at frame starts and dropping whole
    frames, then joining and stripping the same way, reproduces the stock text exactly.
    """
    chunks = frame_chunks(trace)
    if len(chunks) == 1:
        return trace
    stock = [chunks[0]]
    for chunk in chunks[1:]:
        match = _FRAME_START.match(chunk)
        if kept.is_stock(match["file"], match["func"]):
            stock.append(chunk)
    return "".join(stock).strip()


def frame_chunks(trace: str) -> list[str]:
    """A recorded trace cut where its frames start: the text before the first frame (empty as
    torch records them), then each frame with its code and caret lines; joined and stripped, they
    give the trace back. A trace without a frame is one chunk, itself."""
    text = "  " + trace + "\n"
    starts = [match.start() for match in _FRAME_START.finditer(text)]
    if not starts:
        return [trace]
    return [text[:starts[0]]] + [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def full_stack_trace(node: Any) -> str | None:
    return node_trace(node.meta)


def full_traces(program: Any) -> dict[str, str]:
    """FX node name -> its trace with helper frames, for the nodes whose stock trace lacks them."""
    traces: dict[str, str] = {}
    for module in graph_modules(program):
        for node in module.graph.nodes:
            if FULL_TRACE in node.meta:
                traces.setdefault(node.name, node.meta[FULL_TRACE])
    return traces


def graph_modules(program: Any) -> Iterator[Any]:
    """The program's graph and its subgraphs (torch.cond / while_loop bodies), as GraphModules."""
    import torch

    for module in program.graph_module.modules():
        if isinstance(module, torch.fx.GraphModule):
            yield module
