"""The public path's findings: the one finding of a failed `torch.onnx.export`, and the
`torch-version` note every export on the path carries.

A failure becomes ONE finding, from the exception alone, placed only where the exception says:

* a frame of the user's code on its call chain (non-strict capture runs the user's Python; a
  strict capture's error carries dynamo's user stack): that line, as with an adapter;
* else the FX node the exporter names (`Error when translating node %linalg_eigvals ...`; a
  decomposition error's interpreted node), held by the failing frame: the line its recorded
  stack trace ends on — the innermost `forward` frame torch keeps, which may be a call of the
  user's helper function rather than the helper's own line (the message says so);
* else the model's definition, saying the line is unknown.

Coarser than the full pipeline (one problem per export, no helper-function lines), never on a
wrong line.
"""

from __future__ import annotations

import re
from typing import Any

from onnxlens.exporter.locations import from_stack_trace, locate
from onnxlens.exporter.pipeline.failures.call_chains import user_frames
from onnxlens.exporter.pipeline.failures.errors import exception_chain, first_line
from onnxlens.exporter.pipeline.failures.failed_nodes import interpreted_node
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.torch_internals import seen_torch_version, supported_releases
from onnxlens.exporter.torch_internals.active import FALLBACK_REASON
from onnxlens.exporter.types import Finding
from onnxlens.exporter.versions import installed_version

DOCS_URL = "https://pytorch.org/docs/stable/onnx_dynamo.html"


_ANSI_ESCAPE = re.compile(r"\x1B[@-_][0-?]*[ -/]*[@-~]")  # torch colours its "Next steps" text


_FORWARD_ONLY = ("(the innermost `forward` line torch recorded: without an onnxlens adapter for this torch, the "
                 "lines of functions it calls are not known)")


def failure_finding(job: Job, error: BaseException) -> Finding:
    """The one finding of a failed public export (see the module docstring)."""
    chain = list(exception_chain(error))
    code = _code(chain)
    place = locate(user_frames(error, job.workspace), job.workspace)
    note = None
    if place.location is None:
        node = named_node(chain) or interpreted_node(chain)
        trace = node.meta.get("stack_trace") if node is not None else None
        if trace:
            place = locate(from_stack_trace(trace), job.workspace)
            note = _FORWARD_ONLY if place.location is not None else None
    if place.at_fallback(job.fallback):
        note = "(the failing line is not known without an onnxlens adapter for this torch: shown at the model's definition)"
    root = chain[-1]
    message = f"torch.onnx.export failed: {type(root).__name__}: {_lines(_plain(root))}"
    if root is not error:
        message += f"\n({type(error).__name__}: {first_line(_plain(error))})"
    if note:
        message += f"\n{note}"
    return Finding(code=code, stage="capture" if code == "torch-export" else "translate", location=place.location,
                   related=place.related, source_line=place.source_line, docs_url=DOCS_URL, message=message)


def named_node(chain: list[BaseException]) -> Any:
    """The FX node the exporter names in its error (`Error when translating node %x : ...`), as
    the frame that raised it holds it: a local `node` whose text the error quotes."""
    import torch.fx

    text = "\n".join(str(item) for item in chain)
    for item in chain:
        traceback = item.__traceback__
        while traceback is not None:
            node = traceback.tb_frame.f_locals.get("node")
            if isinstance(node, torch.fx.Node) and node.format_node() in text:
                return node
            traceback = traceback.tb_next
    return None


def _code(chain: list[BaseException]) -> str:
    """The finding's code from the exception types (public names of torch.onnx's errors)."""
    names = [type(item).__name__ for item in chain]
    if "TorchExportError" in names:
        return "torch-export"
    if "DispatchError" in names:
        return "unsupported-op"
    return "translation"


def _plain(error: BaseException) -> str:
    return _ANSI_ESCAPE.sub("", str(error))


def _lines(text: str, limit: int = 6) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:limit]) + ("\n…" if len(lines) > limit else "")


def torch_version() -> str:
    return seen_torch_version(installed_version("torch")) or "(unknown version)"


def notice(job: Job) -> Finding:
    """The `torch-version` note every export on the public path carries, at the model's definition."""
    why = f"{FALLBACK_REASON}" if FALLBACK_REASON else f"onnxlens has adapters for torch {supported_releases()}"
    message = (f"torch {torch_version()} has no onnxlens adapter ({why}): exported with the public "
               "torch.onnx.export; findings may be coarser (one problem per export, only `forward`'s lines) "
               "and verification is skipped")
    return Finding(code="torch-version", severity="info", stage="load", location=job.fallback,
                   source_line=None, docs_url=None, message=message)
