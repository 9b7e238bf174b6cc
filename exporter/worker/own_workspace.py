"""A temporary workspace holding a tiny target of our own, for the worker's warm-up exports: the
zygote's before it serves (warmup.py) and each spare's before its job (rehearsal.py).

Both export from it through the pipeline as a job does, and must leave nothing for the jobs
after them: on leaving, what loading from it changed in this process is put back (its modules,
its `sys.path` entry, its import hook: code.unload_workspace) and the directory is removed. A
process killed inside (a spare discarded with SIGKILL mid-rehearsal, a zygote killed mid-warm-up)
cannot remove its own: the workspace is named by its process
(`<temporary directory>/onnxlens-<kind>-<pid>-<random>`), and the next one of this user removes
those whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator

KINDS = ("warmup", "rehearsal")
_ABANDONED = re.compile(rf"onnxlens-(?:{'|'.join(KINDS)})-(\d+)-.+")


@contextlib.contextmanager
def own_workspace(kind: str, files: dict[str, str]) -> Iterator[str]:
    """The workspace's root, holding `files` (name -> text); `kind` is one of KINDS."""
    from onnxlens.exporter.locations import Workspace
    from onnxlens.exporter.pipeline.target.code import unload_workspace  # imports torch: not at module import

    assert kind in KINDS, kind
    _remove_abandoned(tempfile.gettempdir())
    with tempfile.TemporaryDirectory(prefix=f"onnxlens-{kind}-{os.getpid()}-") as root:
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as file:
                file.write(text)
        try:
            yield root
        finally:
            unload_workspace(Workspace(root))


def _remove_abandoned(directory: str) -> None:
    """This user's workspaces whose process died before it removed its own."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        owner = _ABANDONED.fullmatch(entry.name)
        try:
            if owner and entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_uid == os.getuid() \
                    and not _alive(int(owner.group(1))):
                shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:
            continue


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
