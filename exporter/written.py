"""Files as an export wrote them: their sha256 and the identity of the inode it was computed on.

The save stage records each file it writes (the .onnx, its data file, a weights-free model's
graph-only .onnx) as a `WrittenFile`; the result carries them, and the result cache
(server/service/cache.py) trusts a stored result only while every one of them is still that file:
another user of a shared output directory who swaps the "last good model" for other bytes, or a
cache restored next to other files, is detected before the result is shown.

The identity (device, inode, size, mtime, ctime) is taken with fstat on the descriptor the digest
was computed through, after the file was renamed into place, so it is the inode onnxlens wrote,
not whatever a path names a moment later. `changed` compares it first: equal means the inode was
not written, renamed, truncated or chmod-ed since (each sets ctime, which no unprivileged
process can set back), and the file is not read again; anything else (a copy, a restore, a
replaced file) is hashed and compared. Torch-free: the server checks what the worker recorded.
"""

from __future__ import annotations

import hashlib
import os
import stat

from onnxlens.exporter.types import WrittenFile

_CHUNK = 1 << 20


def sha256_of_fd(fd: int) -> str:
    """The sha256 of the whole file open as `fd` (read from its start; the offset is kept)."""
    digest = hashlib.sha256()
    buffer = bytearray(_CHUNK)
    view = memoryview(buffer)
    offset = 0
    while True:
        count = os.preadv(fd, [buffer], offset)
        if not count:
            return digest.hexdigest()
        digest.update(view[:count])
        offset += count


def read_fd(fd: int) -> bytes:
    """The whole file open as `fd` (read from its start; the offset is kept)."""
    chunks = []
    offset = 0
    while chunk := os.pread(fd, _CHUNK, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def recorded(path: str, fd: int, sha256: str = "") -> WrittenFile:
    """`path` as written: its content's digest ("": not taken, the identity only) and the
    identity of the inode open as `fd`."""
    info = os.fstat(fd)
    return WrittenFile(path=os.path.abspath(path), sha256=sha256, size=info.st_size, device=info.st_dev,
                       inode=info.st_ino, mtime_ns=info.st_mtime_ns, ctime_ns=info.st_ctime_ns)


def is_file(fd: int, file: WrittenFile) -> bool:
    """The inode open as `fd` is `file` as recorded (not written, renamed or replaced since)."""
    return _identity(os.fstat(fd)) == _identity_of(file)


def _identity(info: os.stat_result) -> tuple:
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _identity_of(file: WrittenFile) -> tuple:
    return file.device, file.inode, file.size, file.mtime_ns, file.ctime_ns


def changed(file: WrittenFile) -> str | None:
    """Why the file at `file.path` is not the one that was written (None: it is)."""
    try:
        info = os.lstat(file.path)
    except FileNotFoundError:
        return "it was deleted"
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    if stat.S_ISLNK(info.st_mode):
        return "it was replaced by a symbolic link"
    if not stat.S_ISREG(info.st_mode):
        return "it is no longer a regular file"
    if _identity(info) == _identity_of(file):
        return None
    if info.st_size != file.size:
        return "its size changed"
    if not file.sha256:
        return "it was replaced, and its digest was never taken"
    try:
        fd = os.open(file.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        return f"it cannot be read ({error.strerror})"
    try:
        return None if sha256_of_fd(fd) == file.sha256 else "its content changed"
    finally:
        os.close(fd)
