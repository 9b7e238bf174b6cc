"""Atomic writes: a reader sees the old file or the new one, never half of one.

Every file onnxlens writes (the .onnx and its data file, reports, program dumps, the result cache)
goes through here or, for the .onnx pair, through `pipeline/output/onnx_commit.py`'s staging
directory, which uses the same rules: written to a temporary name in the destination's
directory, given the mode a plain `open()` would give it (0644 under the usual umask, not
mkstemp's 0600), then renamed.
Leftovers of writers that were killed half-way are removed by the next write of the same file.
Torch-free: the server's cache uses it too.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile

from onnxlens.exporter import written
from onnxlens.exporter.types import WrittenFile


def _default_mode() -> int:
    """The mode `open(path, "w")` gives a new file: 0666 minus the process's umask."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


# Read once: os.umask can only be read by setting it, which is not safe once threads run.
FILE_MODE = _default_mode()


def staging_prefix(name: str) -> str:
    """Temporary files and directories for `name` are `.<name>.*.tmp` next to it."""
    return f".{name}."


def write_bytes(destination: str | os.PathLike, data: bytes) -> str:
    """Write `data` to `destination` atomically; returns the destination's absolute path."""
    return write_recorded(destination, data).path


def write_recorded(destination: str | os.PathLike, data: bytes) -> WrittenFile:
    """Write `data` to `destination` atomically; the file as written (exporter/written.py: its
    digest, and the identity of the inode renamed into place)."""
    path = os.path.abspath(destination)
    directory = os.path.dirname(path)
    os.makedirs(directory, exist_ok=True)
    name = os.path.basename(path)
    fd, temporary = tempfile.mkstemp(prefix=staging_prefix(name), suffix=".tmp", dir=directory)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, FILE_MODE)
        os.replace(temporary, path)
        file = written.recorded(path, fd, hashlib.sha256(data).hexdigest())
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(temporary)
        raise
    finally:
        os.close(fd)
    remove_stale_staging(directory, name, keep=temporary)
    return file


def write_text(destination: str | os.PathLike, text: str) -> str:
    """Write UTF-8 text atomically. Unencodable characters (surrogate-escaped bytes of a
    non-UTF-8 path in a message) are replaced rather than failing the write."""
    return write_bytes(destination, text.encode("utf-8", errors="replace"))


def remove_stale_staging(directory: str, name: str, keep: str | None = None) -> None:
    """Remove what killed writers left behind: a job cancelled by a newer save (SIGKILL) in the
    middle of a write never reaches its `finally`, and its half-written temporary file or staging
    directory would stay for good. One job per target writes at a time, so any other
    `.<name>.*.tmp` is a leftover."""
    prefix = staging_prefix(name)
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(prefix) and entry.name.endswith(".tmp") and entry.path != keep:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(entry.path)
