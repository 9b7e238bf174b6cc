"""The committed pair's weights kept when a save would write them again byte for byte.

A save that changed the code but not the weights (the usual save: kept fills, target/kept_fills.py,
give a model built again the same random weights) would write the same data file again: BERT-base's
440 MB took 1.5 s of its 1.8 s save here, more than the whole capture. Instead:

1. the graph is saved exactly as the public API saves it, with the tensor writes of onnx_ir's
   external-data writer recorded instead of made (`_write_tensor_at(tensor, file, offset)`, its
   one function that writes a tensor's bytes: every byte of the data file is one of those writes,
   the rest of the file a hole of zeros). The .onnx is the public API's (its layout: offsets,
   lengths, the file's name, all computed by the library as usual); the data file it would write
   is described by the recorded writes;
2. the committed data file is compared with that description: the same size, every tensor's
   `tobytes()` (what `tofile` writes) at its offset, zeros elsewhere;
3. equal: the committed data file is hard-linked under the new pair's name (same inode, no write),
   and the commit goes on as for any save (output/onnx_commit.py). Not equal, or anything
   unexpected (no committed pair, a library without that function or that wrote some bytes
   otherwise, no tensor written at all, no hard links here, an exception): the caller saves as
   usual, the graph again and the weights, having lost the graph's serialization and the
   comparison up to the first difference.

So the saved pair is byte for byte the one a full save writes (tests/exporter/test_kept_weights.py
compares a kept save with stock's export of the same model; the zoo's saves are first saves, which
never take this path). The comparison
reads the committed file, from the page cache when it was written lately: ~0.2 s per 500 MB here,
against ~1.5 s to write it.

The hook into onnx_ir is scoped to the one save call in this forked export child, which runs no
other thread meanwhile, and is undone when the call ends.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from typing import Any, Iterator

import onnx_ir.external_data as _external_data

from onnxlens.exporter import onnx_pair

_CHUNK = 64 << 20  # bytes of a big tensor compared at a time


@dataclass(frozen=True)
class _Write:
    offset: int
    tensor: Any  # an onnx_ir tensor


def save_keeping(onnx_program: Any, staged: str, committed_data: str, linked: str) -> bool:
    """Save `onnx_program`'s graph at `staged` as the public API does, and, when the weights it
    would write are exactly those of `committed_data`, hard-link that file at `linked`: True.
    False: nothing at `linked`; whatever is at `staged` is to be saved over."""
    try:
        writes = _recorded_writes(onnx_program, staged)
        if not writes or not _wrote_nothing(staged) or not _holds(committed_data, writes):
            return False
    except Exception:  # noqa: BLE001 - the full save that follows gives the public API's outcome, its error included
        return False
    try:
        os.link(committed_data, linked)
    except OSError:  # no hard links on this file system, or the file went meanwhile
        return False
    return True


def _recorded_writes(onnx_program: Any, staged: str) -> list[_Write] | None:
    """The public API's save of the graph at `staged`, its tensor writes recorded, not made;
    None when this onnx_ir writes tensors elsewhere than through `_write_tensor_at`."""
    writes: list[_Write] = []
    with _writes_recorded(writes) as recording:
        if not recording:
            return None
        onnx_program.save(staged, include_initializers=True, keep_initializers_as_inputs=False, external_data=True)
    return writes


@contextlib.contextmanager
def _writes_recorded(writes: list[_Write]) -> Iterator[bool]:
    original = getattr(_external_data, "_write_tensor_at", None)
    if original is None:
        yield False
        return

    def record(tensor: Any, file: Any, offset: int) -> None:
        writes.append(_Write(offset, tensor))

    _external_data._write_tensor_at = record
    try:
        yield True
    finally:
        _external_data._write_tensor_at = original


def _wrote_nothing(staged: str) -> bool:
    """The save with its writes recorded left its data file empty: every byte of the weights went
    through the recorded function (an onnx_ir that also writes some other way is not one whose
    writes describe the file)."""
    data = os.path.join(os.path.dirname(staged), onnx_pair.stock_data_file_name(os.path.basename(staged)))
    try:
        return os.path.getsize(data) == 0
    except OSError:
        return False


def _holds(path: str, writes: list[_Write]) -> bool:
    """The file at `path` is the one `writes` make in a new file: each tensor's bytes at its
    offset, zeros between them (a hole), and nothing after the last."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        size = os.fstat(fd).st_size
        ends = [write.offset + write.tensor.nbytes for write in writes]
        if size != max(ends, default=0):  # the cheap check first: another layout, other weights
            return False
        position = 0
        for write in sorted(writes, key=lambda w: w.offset):
            if write.offset < position or not _zeros_at(fd, position, write.offset - position):
                return False  # overlapping writes: not a layout to reason about here
            expected = write.tensor.tobytes()
            for start in range(0, len(expected), _CHUNK):
                # bytes with bytes: one memcmp (a memoryview compares item by item)
                chunk = expected[start:start + _CHUNK] if len(expected) > _CHUNK else expected
                if os.pread(fd, len(chunk), write.offset + start) != chunk:
                    return False
            position = write.offset + len(expected)
        return position == size
    finally:
        os.close(fd)


def _zeros_at(fd: int, offset: int, length: int) -> bool:
    if not length:
        return True
    return os.pread(fd, length, offset) == bytes(length)
