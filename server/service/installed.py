"""What the export worker's interpreter has installed, as one fingerprint: the part of a result's
cache key (server/service/cache.py) that is not the workspace's files.

A result depends on the installed packages its code imports as much as on the workspace: `No
module named 'tqdm'` holds until tqdm is installed, another version of a library may export
another graph. The fingerprint covers every directory the worker's interpreter imports from —
its sys.path as the zygote starts (the standard library, site-packages, PYTHONPATH, what .pth
files add) and the user site-packages even before `pip install --user` creates it — by
* the names importable from each: modules, packages, extension modules;
* each distribution's metadata (`*.dist-info`, `*.egg-info`, `*.egg-link`, `*.egg`) and each
  .pth file, with its mtime.
Installing, removing, upgrading or reinstalling a package (pip, uv and conda all write a new
metadata directory) changes it, and with it every target's key: also for a package the target
does not import, since an entry point or a .pth run at start-up can change any result, and an
export too many is the safe side.

Not seen: an edit inside an installed package's files (a patched module in site-packages, the
sources of an editable install) changes no listing. `onnxlens check --no-cache` and the
editor's "Re-export" export regardless.

Cheap: the interpreter is asked for its sys.path once (a subprocess that imports no torch), and
again when a .pth file changed (they add directories). A directory is listed once, and again
only when its identity or mtime changed: a lookup stats the directories (a dozen), no more. A
listing taken within the coarse clock's tick of a change (server/service/file_times.py) is taken again
at the next call: a second change in that tick would not move the directory's mtime.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Mapping

from onnxlens.exporter.launch import WORKING_DIRECTORY, interpreter_environment
from onnxlens.server.service.file_times import changed_since

log = logging.getLogger("onnxlens.cache")

METADATA_SUFFIXES = (".dist-info", ".egg-info", ".egg-link", ".egg", ".pth")
MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")

# Run by the worker's interpreter, as the zygote is started (exporter/launch.py): its import path.
PROBE_SCRIPT = """
import json, site, sys
directories = [path for path in sys.path if path]
user_site = site.getusersitepackages() if site.ENABLE_USER_SITE else None
if user_site and user_site not in directories:
    directories.append(user_site)
print(json.dumps(directories))
"""


@dataclass(frozen=True)
class _Listing:
    """One directory of the import path as last read."""
    stamp: tuple[int, ...] | None  # its type, identity, mtime and size; None: not there
    digest: bytes  # of what it holds that imports can see
    pth: frozenset[tuple[str, int]]  # its .pth files (path, mtime): they extend the import path
    settled: bool  # read after the coarse clock's tick of its last change: its stamp can be trusted


class InstalledPackages:
    """The fingerprint of what the interpreter `python` (in the environment `env`, None: ours)
    can import outside the workspace. Thread-safe: the language server also asks from threads."""

    def __init__(self, python: str, env: Mapping[str, str] | None = None) -> None:
        self.python = python
        self.env = env
        self._directories: list[str] | None = None  # the import path, once asked
        self._probe_failed = False
        self._pth_when_probed: frozenset[tuple[str, int]] = frozenset()
        self._listings: dict[str, _Listing] = {}
        self._lock = threading.Lock()

    def fingerprint(self) -> str | None:
        """The fingerprint as things are now; None if the interpreter cannot say what its import
        path is (then nothing about its packages can be vouched for)."""
        with self._lock:
            now_ns = time.time_ns()
            probed = False
            if self._directories is None and not self._probe_failed:
                self._probe()
                probed = True
            listings = self._listings_now(now_ns)
            if listings is None:
                return None
            pth = frozenset().union(*(listing.pth for listing in listings))
            if not probed and pth != self._pth_when_probed:  # a .pth came, went or changed: the path may too
                self._probe()
                listings = self._listings_now(now_ns)
                if listings is None:
                    return None
                pth = frozenset().union(*(listing.pth for listing in listings))
            self._pth_when_probed = pth
            digest = hashlib.sha256()
            for directory, listing in zip(self._directories or [], listings):
                digest.update(directory.encode() + b"\0" + listing.digest)
            return digest.hexdigest()

    def _listings_now(self, now_ns: int) -> list[_Listing] | None:
        if self._directories is None:
            return None
        return [self._listing(directory, now_ns) for directory in self._directories]

    def directories(self) -> list[str]:
        """The import path the fingerprint covers (empty if the interpreter could not say)."""
        self.fingerprint()
        return list(self._directories or [])

    def _probe(self) -> None:
        try:
            out = subprocess.run([self.python, "-c", PROBE_SCRIPT], capture_output=True, text=True, timeout=60,
                                 check=True, cwd=WORKING_DIRECTORY, env=interpreter_environment(self.env)).stdout
            directories = json.loads(out)
            if not isinstance(directories, list) or not all(isinstance(d, str) for d in directories):
                raise ValueError(f"not a list of directories: {out[:200]!r}")
        except (OSError, subprocess.SubprocessError, ValueError) as error:
            log.warning("result cache off: cannot read the import path of %s: %s", self.python, error)
            self._directories, self._probe_failed = None, True
            return
        # Relative entries are relative to where the interpreter ran: the probe's and the zygote's alike.
        self._directories = [os.path.normpath(os.path.join(WORKING_DIRECTORY, d)) for d in directories]

    def _listing(self, directory: str, now_ns: int) -> _Listing:
        try:
            status = os.stat(directory)
        except OSError:
            status = None
        stamp = None if status is None else (stat.S_IFMT(status.st_mode), status.st_dev, status.st_ino,
                                             status.st_mtime_ns, status.st_size)
        known = self._listings.get(directory)
        if known is not None and known.settled and known.stamp == stamp:
            return known
        listing = _read(directory, status, stamp, now_ns)
        self._listings[directory] = listing
        return listing


def _read(directory: str, status: os.stat_result | None, stamp: tuple[int, ...] | None, now_ns: int) -> _Listing:
    """What `directory` holds that imports see. A file on the path (a zip archive) is its stamp."""
    if status is None or not stat.S_ISDIR(status.st_mode):
        return _Listing(stamp, repr(stamp).encode(), frozenset(), settled=True)
    settled = not changed_since(status, now_ns)
    names, pth = [], set()
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(METADATA_SUFFIXES):
                    try:
                        entry_status = entry.stat()
                    except OSError:
                        continue  # removed while we read: the directory's mtime moved, read again then
                    settled = settled and not changed_since(entry_status, now_ns)
                    names.append(f"{name}\0{entry_status.st_mtime_ns}")
                    if name.endswith(".pth"):
                        pth.add((entry.path, entry_status.st_mtime_ns))
                elif _importable(name):
                    names.append(name)
    except OSError as error:  # unreadable: only its stamp can tell a change
        return _Listing(stamp, f"{stamp!r} {error.errno}".encode(), frozenset(), settled)
    return _Listing(stamp, "\n".join(sorted(names)).encode(), frozenset(pth), settled)


def _importable(name: str) -> bool:
    """A name an import could find: a package or namespace directory (`torch`), a module or an
    extension module (`six.py`, `_cffi_backend.cpython-311-x86_64-linux-gnu.so`); not an
    editor's swap file, a backup, pip's half-removed `~orch`, nor `__pycache__` (Python writes
    it when it first imports a top-level module)."""
    stem, dot, _ = name.partition(".")
    return stem.isidentifier() and stem != "__pycache__" and (not dot or name.endswith(MODULE_SUFFIXES))
