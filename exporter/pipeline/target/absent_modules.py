"""Modules the target's code looked for in the workspace and did not find: the paths where they
would be are recorded with the result (`ExportResult.absent`), so that `No module named
'helpers'` is not answered from the cache once helpers.py is written (server/service/cache.py), and
writing it re-exports the target in the editor, as editing an imported file does.

Recorded by a finder placed last on sys.meta_path while the job runs: the import system asks it
only when every finder before it found nothing — for an `import`, `importlib.import_module`, or
`importlib.util.find_spec` (a library probing for an optional module). For a module `a.b` looked
for in the directories D (its parent package's `__path__`, or sys.path for a top-level module;
`""` there is the working directory, the target's root), the paths recorded are, in each
directory of D that is the workspace's by the one rule (exporter/locations: under the root, not
vendored, not a venv, not the output directory), `b.py`, `b/__init__.py` and `b` (a namespace
package's directory). Directories outside the workspace are the installed packages' part of the
cache key (server/service/installed.py).

The finder never finds anything itself, and nothing it meets (an odd sys.path entry, a failing
path check) reaches the import it watches.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any, Iterator

from onnxlens.exporter.locations import Workspace


class _Recorder:
    """The meta-path finder of one recording."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace
        self.paths: set[str] = set()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        try:
            self._record(name.rpartition(".")[2], sys.path if path is None else path)
        except Exception:  # noqa: BLE001 - recording must never change what an import does
            pass
        return None

    def _record(self, module: str, directories: Any) -> None:
        for directory in list(directories):
            # Not every entry is a directory: a path hook's key (an editable install's
            # `__editable__…__path_hook__`), a zip archive.
            if not isinstance(directory, str) or not os.path.isdir(directory or os.curdir):
                continue
            where = os.path.join(os.path.realpath(directory or os.curdir), module)
            if self.workspace.contains(where + ".py"):
                self.paths.update((where + ".py", os.path.join(where, "__init__.py"), where))


@contextlib.contextmanager
def recording(workspace: Workspace) -> Iterator[set[str]]:
    """While inside, where the modules looked for in the workspace and not found would be is
    added to the yielded set."""
    recorder = _Recorder(workspace)
    sys.meta_path.append(recorder)
    try:
        yield recorder.paths
    finally:
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(recorder)
