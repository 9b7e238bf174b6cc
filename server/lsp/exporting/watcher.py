"""Changes made on disk outside the editor (git checkout, another editor, a formatter), via watchdog.

Watching is per project root: the root itself non-recursively, and each top-level directory
recursively except ignored ones (the output dir, and what is not the user's code:
exporter/locations/directories.py, through `ignore_dir`). inotify needs one
watch per directory, and a recursive watch of the root would walk a .venv of tens of thousands of
directories; ignored directories nested deeper are filtered per event instead.

A watched directory that is deleted or moved away takes its inotify watch with it: the watch is
dropped (`forget`), so that a directory created there again is watched again (a top-level one by
its root's watch; a workspace folder itself by its parent's, `watch_folder`).

The directories the export worker's interpreter imports from (site-packages, ...) are watched
too, each non-recursively (`watch_installed`): what pip adds or removes there is an entry of
one (triggers.py re-exports when the installed packages changed).

watchdog calls back on its own thread; events are handed to the event loop with
call_soon_threadsafe and all the deciding happens there. `watch_root` walks directories, so the
server calls it in a worker thread (watchdog's scheduling is thread-safe).
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from watchdog.events import (EVENT_TYPE_CLOSED, EVENT_TYPE_CREATED, EVENT_TYPE_DELETED, EVENT_TYPE_MODIFIED,
                             EVENT_TYPE_MOVED, FileSystemEvent, FileSystemEventHandler)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch

log = logging.getLogger(__name__)


class _Forward(FileSystemEventHandler):
    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[str], None],
                 on_new_directory: Callable[[str], None] | None, watched: str,
                 on_gone: Callable[[str], None]) -> None:
        self._loop = loop
        self._callback = callback
        self._on_new_directory = on_new_directory
        self._watched = watched
        self._on_gone = on_gone

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_directory:
            source = os.fsdecode(event.src_path)
            if event.event_type == "created" and self._on_new_directory:
                self._loop.call_soon_threadsafe(self._on_new_directory, source)
            elif event.event_type in ("deleted", "moved") and source == self._watched:
                self._loop.call_soon_threadsafe(self._on_gone, source)  # the watch died with it
            return
        for path in (event.src_path, getattr(event, "dest_path", "")):
            if path:
                self._loop.call_soon_threadsafe(self._callback, os.fsdecode(path))


class _FolderAppears(FileSystemEventHandler):
    """On a workspace folder's parent: the folder created again (or moved back)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, folders: dict[str, Callable[[str], None]]) -> None:
        self._loop = loop
        self._folders = folders

    def on_any_event(self, event: FileSystemEvent) -> None:
        if not event.is_directory or event.event_type not in ("created", "moved"):
            return
        path = os.fsdecode(getattr(event, "dest_path", "") or event.src_path)
        if (callback := self._folders.get(path)) is not None:
            self._loop.call_soon_threadsafe(callback, path)


class _EntriesChanged(FileSystemEventHandler):
    """On a directory of the worker interpreter's import path, watched non-recursively: an entry
    created, removed, renamed or written (a package installed, upgraded or removed). Every Python
    process that starts reads the .pth files there: opening and reading are not changes."""

    CHANGES = {EVENT_TYPE_CREATED, EVENT_TYPE_DELETED, EVENT_TYPE_MOVED, EVENT_TYPE_MODIFIED, EVENT_TYPE_CLOSED}

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._callback = callback

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in self.CHANGES:
            self._loop.call_soon_threadsafe(self._callback)


class DiskWatcher:
    """Calls `callback(path)` on the event loop for every file created, changed, moved or deleted."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[str], None],
                 ignore_dir: Callable[[str], bool]) -> None:
        self._loop = loop
        self._callback = callback
        self._ignore_dir = ignore_dir
        self._observer = Observer()
        self._watches: dict[str, ObservedWatch] = {}  # directory -> its watch
        self._config_only: set[str] = set()  # folders watched only for a config file appearing
        self._folders: dict[str, Callable[[str], None]] = {}  # workspace folder -> called when it appears
        self._parents: set[str] = set()  # their parents, watched non-recursively
        self._installed: dict[str, ObservedWatch] = {}  # the import path's directories (watch_installed)
        self._started = False

    def _is_watched(self, path: str) -> bool:
        return path in self._watches and path not in self._config_only

    def watch_root(self, root: str) -> None:
        if self._is_watched(root):
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
        if folder in self._watches:
            return
        try:
            self._watches[folder] = self._observer.schedule(
                _Forward(self._loop, self._callback, None, folder, self.forget), folder, recursive=False)
        except OSError as error:
            log.warning("cannot watch %s: %s", folder, error)
            return
        self._config_only.add(folder)

    def watch_folder(self, folder: str, appeared: Callable[[str], None]) -> None:
        """A workspace folder deleted and created again (a fresh clone, a restored copy) takes
        its watches with it: its parent is watched, non-recursively, and `appeared(folder)` is
        called on the event loop when the folder is there again."""
        parent = os.path.dirname(folder)
        if parent == folder:  # the filesystem root has no parent to watch
            return
        self._folders[folder] = appeared
        if parent in self._parents:
            return
        try:
            self._observer.schedule(_FolderAppears(self._loop, self._folders), parent, recursive=False)
        except OSError as error:
            log.warning("cannot watch %s: %s", parent, error)
            return
        self._parents.add(parent)

    def unwatch_folder(self, folder: str) -> None:
        """No longer a workspace folder: its coming back means nothing."""
        self._folders.pop(folder, None)

    def watch_installed(self, directories: list[str], changed: Callable[[], None]) -> None:
        """The directories of the worker interpreter's import path (server/service/installed.py), each
        non-recursively: `changed()` on the event loop when an entry of one changes. Not the
        workspace's watches: `forget` never drops them. Called in a worker thread."""
        for directory in directories:
            if directory in self._installed or not os.path.isdir(directory):
                continue  # a directory that is not there yet is seen by the next lookup's fingerprint
            try:
                self._installed[directory] = self._observer.schedule(
                    _EntriesChanged(self._loop, changed), directory, recursive=False)
            except OSError as error:
                log.warning("cannot watch %s: %s", directory, error)

    def forget(self, path: str) -> None:
        """`path` and everything below it is gone (deleted, moved away): its watches died with
        it and are dropped, so that what is created there again is watched again."""
        for directory in [d for d in self._watches if d == path or d.startswith(path.rstrip(os.sep) + os.sep)]:
            watch = self._watches.pop(directory)
            self._config_only.discard(directory)
            try:
                self._observer.unschedule(watch)
            except (KeyError, OSError):
                pass

    def _watch_top_level(self, path: str) -> None:
        if self._is_watched(path) or self._ignore_dir(path):
            return
        self._schedule(path, recursive=True, top_level_of=None)

    def _schedule(self, path: str, *, recursive: bool, top_level_of: str | None) -> None:
        # A directory created in a root gets its own recursive watch; deeper ones are covered already.
        on_new = (lambda p: self._watch_top_level(p) if os.path.dirname(p) == top_level_of else None) \
            if top_level_of else None
        if path in self._config_only:  # the folder's config appeared: watched fully from now on
            self.forget(path)
        try:
            self._watches[path] = self._observer.schedule(
                _Forward(self._loop, self._callback, on_new, path, self.forget), path, recursive=recursive)
        except OSError as error:  # e.g. inotify watch limit reached
            log.warning("cannot watch %s: %s", path, error)

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
