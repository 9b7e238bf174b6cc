"""Files the target's code opens while it runs — a JSON config read by the model's factory or in
`forward`, a vocabulary, a table of constants — join its closure as the files it imports do, so
editing one re-exports the target and changes its cache key: `onnxlens check` never passes on a
result computed from the file's old content.

Recorded with an audit hook (PEP 578): `open()`, `os.open()`, `io.open_code()` and everything
built on them (json.load(open(...)), numpy.load, torch.load) raise the "open" event. Hooks
cannot be removed, so one is installed per process, when a job first records, and it does
nothing while no recording is active (a forked export child records its one job; the zygote
never records). Recorded: files opened for reading (read-only or read-write) that are the
workspace's by the one rule (exporter/locations: under the root, not vendored, not the output
directory), compiled caches (`__pycache__`, `.pyc`) aside; files opened only to be written are
not inputs. The hook cannot tell whether the open succeeds: a file the code looked for and did
not find is recorded too, and its appearance changes the key.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

from onnxlens.exporter.locations import Workspace

_installed = False
_recording: tuple[Workspace, set[str]] | None = None


def _on_audit_event(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or _recording is None:
        return
    path, _mode, flags = args
    if isinstance(flags, int) and (flags & os.O_ACCMODE == os.O_WRONLY or flags & os.O_DIRECTORY):
        return
    try:
        path = os.fsdecode(path)  # str, bytes or a PathLike; an int is a descriptor
    except TypeError:
        return
    if path.endswith(".pyc") or "__pycache__" in path:
        return
    workspace, opened = _recording
    path = os.path.abspath(path)
    if workspace.contains(path):
        opened.add(os.path.realpath(path))


@contextlib.contextmanager
def recording(workspace: Workspace) -> Iterator[set[str]]:
    """While inside, the workspace files opened for reading are added to the yielded set."""
    global _installed, _recording
    if not _installed:
        sys.addaudithook(_on_audit_event)
        _installed = True
    opened: set[str] = set()
    _recording = (workspace, opened)
    try:
        yield opened
    finally:
        _recording = None
