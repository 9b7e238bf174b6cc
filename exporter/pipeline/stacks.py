"""Stack traces through the user's helper functions, without changing the exported ONNX.

Non-strict capture (the exporter's first choice) records, for each FX node, only the frames of
functions named `forward` (plus registered "anchors"): an op called in a helper function is
blamed on forward's call of the helper, and the helper's line gets no hover either. Registering
every function of the workspace files as an anchor while capturing keeps the helper frames.

The stack traces end up in the ONNX model's metadata, which must stay byte-identical to the
public API's: the stack_trace that reaches translation is the stock one. So after decomposition
each node's trace is put back to the stock form (the extra frames removed) and the full one is
kept in `node.meta[FULL_TRACE]` for our own use (findings, line info). Strict (dynamo) capture
records helper frames by itself: nothing to restore there.
"""

from __future__ import annotations

import contextlib
import os
import re
from typing import Any, Iterator

FULL_TRACE = "onnxlens_stack_trace"
_FRAME_START = re.compile(r'^  File "(?P<file>.+?)", line \d+, in (?P<func>.+)$', re.MULTILINE)


@contextlib.contextmanager
def helper_frames_kept(files: list[str]) -> Iterator[set[tuple[str, str]]]:
    """While active, non-strict capture records frames of every function defined in `files`.

    Yields the (file, function name) anchors it added; they are removed on exit, so nothing
    leaks into later captures in this process.
    """
    from torch.fx import proxy

    anchors = getattr(proxy, "_STACK_TRACE_ANCHORS", None)
    added: set[tuple[str, str]] = set()
    if anchors is None:  # older torch: helper frames stay lost, forward's line is still right
        yield added
        return
    for file in files:
        try:
            with open(file, encoding="utf-8") as handle:
                code = compile(handle.read(), file, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            continue
        for item in _code_objects(code):
            # Frames name the file as it was imported; register the resolved path too.
            for name in {file, os.path.realpath(file)}:
                if (name, item.co_name) not in anchors:
                    added.add((name, item.co_name))
    anchors.update(added)
    try:
        yield added
    finally:
        anchors.difference_update(added)


def restore_stock_traces(program: Any, added: set[tuple[str, str]]) -> None:
    """Give every node the stack trace stock capture would have recorded; keep ours aside."""
    if not added:
        return
    for module in graph_modules(program):
        for node in module.graph.nodes:
            trace = node.meta.get("stack_trace")
            if not trace:
                continue
            stock = stock_trace(trace, added)
            if stock != trace:
                node.meta[FULL_TRACE] = trace
                node.meta["stack_trace"] = stock


def stock_trace(trace: str, added: set[tuple[str, str]]) -> str:
    """`trace` without the frames only our anchors kept.

    The tracer stores `"".join(StackSummary.format()).strip()`: frames of `  File "...", line N,
    in func` plus indented code and caret lines. Cutting at frame starts and dropping whole
    frames, then joining and stripping the same way, reproduces the stock text exactly.
    """
    text = "  " + trace + "\n"
    starts = [match.start() for match in _FRAME_START.finditer(text)]
    if not starts:
        return trace
    chunks = [text[:starts[0]]] + [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
    kept = [chunks[0]]
    for chunk in chunks[1:]:
        match = _FRAME_START.match(chunk)
        frame = (match["file"], match["func"])
        if frame in added and frame[1] != "forward" and not frame[0].endswith("torch/__init__.py"):
            continue
        kept.append(chunk)
    return "".join(kept).strip()


def full_stack_trace(node: Any) -> str | None:
    return node.meta.get(FULL_TRACE) or node.meta.get("stack_trace")


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


def _code_objects(code) -> Iterator[Any]:
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_consts"):
            yield from _code_objects(const)
