"""The key that signs what onnxlens keeps in a workspace for this user on this machine: the
result cache's entries (server/service/cache.py) and kept verifications (exporter/verify/reuse.py).

32 random bytes in `$XDG_CACHE_HOME/onnxlens/result-key` (`~/.cache/onnxlens/result-key` when the
variable is unset): outside every workspace, created on first use with mode 0600 in a 0700
directory, by whichever onnxlens process comes first (written under a temporary name and linked
into place, so two processes starting at once agree on one key). A cache entry or a kept
verification counts as this user's only with an HMAC under this key: one another user wrote, one
committed to a repository, or one restored on a CI machine does not carry it.

A key others could know signs nothing: a key file this user does not own, that group or others
can read or write, or that is not a regular file of the right size, is refused (`KeyRefused`),
and the cache is then off (the caller says why) and verification always runs. Deleting the
file only makes the cache miss.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path

KEY_BYTES = 32
KEY_NAME = "result-key"


class KeyRefused(Exception):
    """The key file exists but cannot be trusted, or cannot be created or read."""


def key_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "onnxlens" / KEY_NAME


def user_key(env: Mapping[str, str] | None = None) -> bytes:
    """This user's key, created if there is none. Raises KeyRefused with the reason."""
    path = key_path(env)
    try:
        if not os.path.lexists(path):
            _create(path)
        return _read(path)
    except OSError as error:
        raise KeyRefused(f"cannot use the cache key {path}: {error.strerror or error}") from None


def _create(path: Path) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{KEY_NAME}.", suffix=".tmp", dir=path.parent)  # mode 0600
    try:
        os.write(fd, os.urandom(KEY_BYTES))
        os.close(fd)
        with contextlib.suppress(FileExistsError):  # another process was first: its key stands
            os.link(temporary, path)
    finally:
        os.remove(temporary)


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != KEY_BYTES:
            raise KeyRefused(f"the cache key {path} is not a {KEY_BYTES}-byte file: delete it to make a new one")
        if info.st_uid != os.geteuid():
            raise KeyRefused(f"the cache key {path} belongs to another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise KeyRefused(f"the cache key {path} can be read or written by others "
                             f"(mode {stat.S_IMODE(info.st_mode):o}): delete it to make a new one")
        key = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    if len(key) != KEY_BYTES:
        raise KeyRefused(f"the cache key {path} changed while it was read")
    return key
