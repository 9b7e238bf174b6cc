"""Source paths in the saved .onnx: as the public API writes them, relative, or none at all.

The exporter writes each ONNX node's FX stack trace into its `metadata_props`
(`pkg.torch.onnx.stack_trace`): `File "/home/me/project/models/net.py", line 12, in forward`
and so on, for every frame. A model shipped as it is carries the exporting machine's home
directory and site-packages layout, and its bytes change with the checkout's location (no
reproducible builds). The target's `source-paths` setting (docs/configuration.md):

* `absolute` (default): the public API's bytes, untouched;
* `relative`: each path rewritten by `relative_path`: workspace files relative to the workspace
  root (`models/net.py`), library files from their site-packages (`<site-packages>/transformers/…`),
  the standard library from its lib directory (`<python>/…`), anything else by its file name;
* `none`: the stack traces left out.

Only the saved files change. Hover, code lens, findings and the report come from the job's own
data, computed before the save from the traces as exported. When the saved traces differ, a
sidecar `<output>.sources.json` (not meant to ship: it holds the absolute paths) keeps every
rewritten node's original trace, by graph and node name, so a node of the shipped model can
still be mapped back to its source line on the machine that exported it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from typing import Any, Iterator

from onnxlens.exporter import atomic
STACK_TRACE = "pkg.torch.onnx.stack_trace"
_FILE = re.compile(r'File "(?P<path>[^"]+)"')
_SITE_PACKAGES = re.compile(r"/(?:site|dist)-packages/")
_STDLIB = re.compile(r"/lib/python\d+\.\d+/")


def sidecar_path(onnx_path: str) -> str:
    return f"{onnx_path}.sources.json"


def relative_path(path: str, root: str) -> str:
    """The path as `relative` mode writes it: never absolute, never naming the machine."""
    root = os.path.join(os.path.realpath(root), "")
    real = os.path.realpath(path) if os.path.isabs(path) else path
    if real.startswith(root):
        return real[len(root):]
    site = _SITE_PACKAGES.search(path)
    if site:
        return "<site-packages>/" + path[site.end():]
    stdlib = _STDLIB.search(path)
    if stdlib:
        return "<python>/" + path[stdlib.end():]
    return os.path.basename(path) if os.path.isabs(path) else path


def rewritten(trace: str, mode: str, root: str) -> str | None:
    """The trace as `mode` saves it; None: left out."""
    if mode == "none":
        return None
    if mode == "relative":
        return _FILE.sub(lambda match: f'File "{relative_path(match["path"], root)}"', trace)
    return trace


@contextlib.contextmanager
def applied(model: Any, mode: str, root: str) -> Iterator[list[dict[str, str]]]:
    """While inside, the ir model's node traces are as `mode` saves them; yields the sidecar's
    entries (graph, node, the original trace) of the nodes that changed. Restored after."""
    changed: list[tuple[Any, str]] = []
    entries: list[dict[str, str]] = []
    try:
        if mode != "absolute":
            for graph_name, node in _nodes(model):
                trace = node.metadata_props.get(STACK_TRACE)
                if trace is None:
                    continue
                new = rewritten(trace, mode, root)
                if new == trace:
                    continue
                changed.append((node, trace))
                entries.append({"graph": graph_name, "node": node.name or "", "stack_trace": trace})
                if new is None:
                    del node.metadata_props[STACK_TRACE]
                else:
                    node.metadata_props[STACK_TRACE] = new
        yield entries
    finally:
        for node, trace in changed:
            node.metadata_props[STACK_TRACE] = trace


def apply_to_proto(proto: Any, mode: str, root: str) -> list[dict[str, str]]:
    """The same rewrite on a ModelProto (the graph-only model, built before the save), in place;
    the sidecar's entries."""
    entries: list[dict[str, str]] = []
    if mode == "absolute":
        return entries
    for graph_name, node in _proto_nodes(proto):
        props = {prop.key: prop for prop in node.metadata_props}
        prop = props.get(STACK_TRACE)
        if prop is None:
            continue
        new = rewritten(prop.value, mode, root)
        if new == prop.value:
            continue
        entries.append({"graph": graph_name, "node": node.name, "stack_trace": prop.value})
        if new is None:
            node.metadata_props.remove(prop)
        else:
            prop.value = new
    return entries


def write_sidecar(onnx_path: str, mode: str, root: str, entries: list[dict[str, str]]) -> str | None:
    """The sidecar next to the saved model, or, when the saved traces are the originals, none
    (an older export's is removed: it would describe another model)."""
    path = sidecar_path(onnx_path)
    if not entries:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
        return None
    document = {"model": os.path.basename(onnx_path), "root": os.path.realpath(root), "source_paths": mode,
                "nodes": entries}
    return atomic.write_text(path, json.dumps(document, indent=1) + "\n")


def _nodes(model: Any) -> Iterator[tuple[str, Any]]:
    for graph in model.graphs():
        for node in graph:
            yield graph.name or "", node
    for function in model.functions.values():
        for node in function:
            yield f"{function.domain}::{function.name}", node


def _proto_nodes(proto: Any) -> Iterator[tuple[str, Any]]:
    def walk(graph: Any) -> Iterator[tuple[str, Any]]:
        for node in graph.node:
            yield graph.name, node
            for attribute in node.attribute:
                for sub in [attribute.g] if attribute.HasField("g") else list(attribute.graphs):
                    yield from walk(sub)
    yield from walk(proto.graph)
    for function in proto.functions:
        for node in function.node:
            yield f"{function.domain}::{function.name}", node
