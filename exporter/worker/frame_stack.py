"""Run a function with room for a deep Python call stack in one piece of the interpreter's frame
memory, so that call depth does not map and unmap that memory thousands of times.

CPython (3.11 on) keeps Python frames in chunks of a per-thread stack; a frame that does not fit
in the current chunk gets a new one (an mmap of 16 kB, or the power of two that holds it), and
when the first frame of a chunk returns the chunk is unmapped at once. A computation whose call
depth goes back and forth across a chunk's end maps, faults in and unmaps a chunk each time:
torch.export's decompositions of the examples' encoder in an export child did so ~18,000 times
(74,000 page faults, 0.5 s of its 1.4 s). Where the chunk's end falls depends on how deep the
caller already is, so a child of the worker paid it while the same export called from a
shallower stack did not.

`with_deep_frame_stack` calls the function from a frame that declares a large value stack
(its code's `co_stacksize`, which only sizes the frame): it gets a chunk of its own of 2 x that
size, and everything it calls, up to ~64,000 frame slots deep (a few thousand frames), stays in
the rest of that chunk. The function and its result are untouched: only where the interpreter
keeps the frames changes.
"""

from __future__ import annotations

from typing import Any, Callable, TypeVar

T = TypeVar("T")

# Slots of the calling frame's value stack (8 bytes each): 512 kB, in a chunk of 1 MB.
_SLOTS = 1 << 16


def _call(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return function(*args, **kwargs)


_call.__code__ = _call.__code__.replace(co_stacksize=_SLOTS)


def with_deep_frame_stack(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """`function(*args, **kwargs)`, its frames in one chunk of the frame stack (module doc)."""
    return _call(function, *args, **kwargs)
