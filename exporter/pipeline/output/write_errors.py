"""An operating-system error while writing an output (a full disk, an output path that is a
directory, no permission) as an `output` finding naming the path, the error and what to do: not
a bug of ours.
"""

from __future__ import annotations

import errno
import os

from onnxlens.exporter.types import Finding


_HINTS = {
    errno.ENOSPC: "free space on that disk, or set `output-dir` to another one",
    errno.EDQUOT: "the disk quota is used up: free space, or set `output-dir` to another disk",
    errno.EISDIR: "that path is a directory: set the target's `output` to a file path",
    errno.ENOTDIR: "a part of that path is a file, not a directory",
    errno.EACCES: "this user may not write there: fix the permissions, or set `output-dir`",
    errno.EPERM: "this user may not write there: fix the permissions, or set `output-dir`",
    errno.EROFS: "the file system is read-only: set `output-dir` to a writable directory",
}


def _in_staging(path: str) -> bool:
    """A path inside a staging directory (`.<name>.*.tmp`): ours, not worth naming."""
    return any(part.startswith(".") and part.endswith(".tmp") for part in path.split(os.sep))


def output_finding(destination: str, error: OSError) -> Finding:
    """The `output` finding of an operating-system error while writing `destination`."""
    reason = error.strerror or str(error)
    code = errno.errorcode.get(error.errno or 0)
    message = f"cannot write {destination}: {reason}" + (f" ({code})" if code else "")
    named = os.path.abspath(os.fsdecode(error.filename)) if error.filename else None
    if named and named != destination and not _in_staging(named):
        message += f", at {named}"  # a directory on the way, say
    hint = _HINTS.get(error.errno or 0)
    if hint:
        message += f"; {hint}"
    return Finding(code="output", stage="save", message=message)
