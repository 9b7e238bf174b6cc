"""The adapter for torch 2.12's internals: 2.13's (torch_2_13.py), except where 2.12 differs.

Measured on torch 2.12.1 (every name torch_2_13.py uses, its signature, and tests/exporter +
tests/worker): one difference. 2.12's tracer has no stack-trace anchors
(`torch.fx.proxy._STACK_TRACE_ANCHORS` came in 2.13): non-strict capture keeps only the frames of
functions named `forward`, decided in `TracerBase._filter_traceback_frames`, a method torch
documents as the place to customise that filtering. With 2.13's adapter the helper frames were
lost and an op in a helper function was reported on `forward`'s call of the helper.
"""

from __future__ import annotations

import contextlib
import traceback
from typing import Any, Callable, Iterator

from onnxlens.exporter.torch_internals.torch_2_13 import *  # noqa: F403 - the same pieces, but:
from onnxlens.exporter.torch_internals.torch_2_13 import __all__ as _REFERENCE

NAME = "torch_2_12"

__all__ = [*_REFERENCE]


@contextlib.contextmanager
def stack_frames_kept(keep: Callable[[str, str], bool]) -> Iterator[bool]:
    """As 2.13's (torch_2_13.stack_frames_kept), through the tracer's frame filter: in the mode
    non-strict capture uses (`_record_forward_stack_traces_only`), a frame is kept when 2.12 keeps
    it (`forward`, torch/__init__.py) or `keep` accepts it; then torch's own removal of
    uninteresting files, as 2.12 does it. The other mode is left to torch."""
    from torch.fx import proxy
    from torch.fx.experimental.symbolic_shapes import uninteresting_files

    stock = proxy.TracerBase.__dict__["_filter_traceback_frames"]

    def filtered(tracer: Any, user_stack_summary: traceback.StackSummary) -> traceback.StackSummary:
        if not tracer._record_forward_stack_traces_only:
            return stock(tracer, user_stack_summary)
        frames = [frame for frame in user_stack_summary
                  if frame.name == "forward" or frame.filename.endswith("torch/__init__.py")
                  or keep(frame.filename, frame.name)]
        uninteresting = uninteresting_files()
        return traceback.StackSummary.from_list([frame for frame in frames if frame.filename not in uninteresting])

    proxy.TracerBase._filter_traceback_frames = filtered
    try:
        yield True
    finally:
        proxy.TracerBase._filter_traceback_frames = stock
