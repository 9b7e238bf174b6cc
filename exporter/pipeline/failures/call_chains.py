"""The call chain of a failure, outermost first, from the best source its exception chain has:
dynamo's user stack (strict capture; a torch.cond / loop body in non-strict capture, with the
Python callers around it), the traceback (non-strict capture runs the user's Python), the frame
torch's message blames, else the frames of a library's code (a transformers model).
"""

from __future__ import annotations

import re

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, from_traceback, is_user_code
from onnxlens.exporter.pipeline.failures.errors import exception_chain

_BLAME_RE = re.compile(r'The following call raised this error:\s*\n\s*File "(.+?)", line (\d+)')


def user_frames(error: BaseException, workspace: Workspace) -> list[Frame]:
    """The call chain of the failure, outermost first, from the best source available."""
    for item in exception_chain(error):
        # dynamo knows the user's stack when tracing (strict mode; a torch.cond / loop body in
        # non-strict mode, whose callers up to the op's call are Python's own).
        real_stack = getattr(item, "real_stack", None)
        if real_stack:
            frames = from_traceback(real_stack)
            if any(is_user_code(f.file, workspace) for f in frames):
                return _python_callers(error, frames, workspace) + frames
        summary = getattr(item, "innermost_user_frame_summary", None)
        if summary is not None and is_user_code(getattr(summary, "filename", None), workspace):
            return from_traceback([summary])
    for item in exception_chain(error):
        # non-strict mode runs the user's Python: the traceback has the user's frames.
        frames = from_traceback(item)
        if any(is_user_code(f.file, workspace) for f in frames):
            return frames
    for item in exception_chain(error):
        match = _BLAME_RE.search(str(item))
        if match:
            return [Frame(match.group(1), int(match.group(2)))]
    # No user frame at all: third-party library frames (a transformers model) still help.
    for item in exception_chain(error):
        frames = from_traceback(item)
        if any(classify(f.file, workspace) is Origin.LIBRARY for f in frames):
            return frames
    return []


def _python_callers(error: BaseException, traced: list[Frame], workspace: Workspace) -> list[Frame]:
    """The frames of the model's code that Python ran around what dynamo traced (in non-strict
    capture, the calls down to a higher-order op whose body dynamo traced); none in strict."""
    seen = {(frame.file, frame.line) for frame in traced}
    for item in exception_chain(error):
        frames = from_traceback(item)
        if any(classify(frame.file, workspace) is not Origin.INTERNAL for frame in frames):
            return [frame for frame in frames if (frame.file, frame.line) not in seen]
    return []


def innermost_outside_torch(frames: list[Frame], workspace: Workspace) -> Frame | None:
    """The innermost frame of a chain that is the model's code (the user's or a library's)."""
    outside = [frame for frame in frames if classify(frame.file, workspace) is not Origin.INTERNAL]
    return outside[-1] if outside else None
