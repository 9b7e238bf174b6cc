"""Changes made on disk outside the editor (git checkout, another editor, a formatter), via watchdog.

Watching is per project root: the root itself non-recursively, and each top-level directory
recursively except ignored ones (.git, virtual environments, the output dir...). inotify needs one
watch per directory, and a recursive watch of the root would walk a .venv of tens of thousands of
directories; ignored directories nested deeper are filtered per event instead.

watchdog calls back on its own thread; events are handed to the event loop with
call_soon_threadsafe and all the deciding happens there. `watch_root` walks directories, so the
server calls it in a worker thread (watchdog's scheduling is thread-safe).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

log = logging.getLogger(__name__)


class _Forward(FileSystemEventHandler):
    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[str], None],
                 on_new_directory: Callable[[str], None] | None) -> None:
        self._loop = loop
        self._callback = callback
        self._on_new_directory = on_new_directory

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            if event.event_type == "created" and self._on_new_directory:
                self._loop.call_soon_threadsafe(self._on_new_directory, os.fsdecode(event.src_path))
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self._loop.call_soon_threadsafe(self._callback, os.fsdecode(path))


class DiskWatcher:
    """Calls `callback(path)` on the event loop for every file created, changed, moved or deleted."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[str], None],
                 ignore_dir: Callable[[str], bool]) -> None:
        self._loop = loop
        self._callback = callback
        self._ignore_dir = ignore_dir
        self._observer = Observer()
        self._watched: set[str] = set()
        self._config_only: set[str] = set()  # folders watched only for a config file appearing
        self._started = False

    def watch_root(self, root: str) -> None:
        if root in self._watched:
            return
        self._schedule(root, recursive=False, top_level_of=root)
        try:
            entries = list(os.scandir(root))
        except OSError as error:
            log.warning("cannot watch %s: %s", root, error)
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                self._watch_top_level(entry.path)

    def watch_for_config(self, folder: str) -> None:
        """A workspace folder without a config: only the folder itself (not its subdirectories),
        so that a config file created or a pyproject.toml edited there is seen. Not counted as
        watched: when the config appears, `watch_root` watches the folder fully."""
        if folder in self._watched or folder in self._config_only:
            return
        try:
            self._observer.schedule(_Forward(self._loop, self._callback, None), folder, recursive=False)
        except OSError as error:
            log.warning("cannot watch %s: %s", folder, error)
            return
        self._config_only.add(folder)

    def _watch_top_level(self, path: str) -> None:
        if path in self._watched or self._ignore_dir(path) or os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            return
        self._schedule(path, recursive=True, top_level_of=None)

    def _schedule(self, path: str, *, recursive: bool, top_level_of: str | None) -> None:
        # A directory created in a root gets its own recursive watch; deeper ones are covered already.
        on_new = (lambda p: self._watch_top_level(p) if os.path.dirname(p) == top_level_of else None) \
            if top_level_of else None
        try:
            self._observer.schedule(_Forward(self._loop, self._callback, on_new), path, recursive=recursive)
        except OSError as error:  # e.g. inotify watch limit reached
            log.warning("cannot watch %s: %s", path, error)
            return
        self._watched.add(path)

    def start(self) -> None:
        if not self._started:
            self._observer.daemon = True
            self._observer.start()
            self._started = True

    def stop(self) -> None:
        if self._started:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._started = False
