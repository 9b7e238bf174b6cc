"""Library preloading: the zygote imports the installed libraries that finished jobs used.

A transformers model's first job imports transformers (seconds); its child reports the library
modules it imported (`library_modules`, site-packages only: never the user's code), and the
zygote imports them itself while it is idle or about to fork, so later children find them
loaded. The zygote's invariants hold: no user code runs here, and the zygote must stay safe to
fork, so a library that starts a thread on import makes the zygote retire (the server replaces
it with one that never preloads that package).

"0" in PRELOAD_VARIABLE turns preloading off; PRELOAD_DENY_VARIABLE lists top-level packages
never to preload (comma-separated).
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from typing import Callable, Mapping

from onnxlens.exporter.wire import frames
from onnxlens.exporter.wire.protocol import PRELOAD_DENY_VARIABLE, PRELOAD_VARIABLE
from onnxlens.exporter.worker.warmup import ready_to_fork, stop_tqdm_monitor


class Preloader:
    def __init__(self, environ: Mapping[str, str] = os.environ) -> None:
        self.enabled = environ.get(PRELOAD_VARIABLE, "1") != "0"
        self.deny = set(filter(None, environ.get(PRELOAD_DENY_VARIABLE, "").split(",")))
        self.wanted: set[str] = set()
        self.failed: set[str] = set()
        self.retiring = False

    def want(self, names: list[str]) -> None:
        """Modules a finished job imported."""
        if self.enabled and not self.retiring:
            self.wanted.update(names)

    def run(self, after_imports: Callable[[], None] = lambda: None) -> frames.Preloaded | frames.Retire | None:
        """Import the wanted modules here; the frame to send the server (`preloaded`, or
        `retire` when an import started a thread), None when there was nothing to do.

        `after_imports` runs once modules were imported, before the heap is frozen: the
        pipeline's tables follow what the imports registered (a library's ops)."""
        names = sorted(n for n in self.wanted
                       if n not in sys.modules and n not in self.failed
                       and n.partition(".")[0] not in self.deny)
        self.wanted.clear()
        if not names:
            return None
        started = time.perf_counter()
        threads = _thread_count()
        loaded = 0
        for name in names:
            if name in sys.modules:
                continue  # imported by an earlier one
            try:
                importlib.import_module(name)
                loaded += 1
            except BaseException as error:  # noqa: BLE001 - a module that fails here is just not preloaded
                if isinstance(error, KeyboardInterrupt):
                    raise
                self.failed.add(name)  # not again
                continue
            if _thread_count() > threads:
                stop_tqdm_monitor()
            if _thread_count() > threads:
                package = name.partition(".")[0]
                print(f"onnxlens worker: importing {name} started a thread; this worker retires",
                      file=sys.stderr)
                self.retiring = True
                return frames.Retire(deny=package, reason=f"importing {name} started a thread")
        if loaded:
            try:
                after_imports()
            except Exception as error:  # noqa: BLE001 - children then bring the tables up to date themselves
                print(f"onnxlens worker: updating the tables after preloading failed: {error!r}", file=sys.stderr)
        ready_to_fork()
        return frames.Preloaded(modules=loaded, seconds=time.perf_counter() - started)


def library_modules(before: set[str]) -> list[str]:
    """Installed-library modules (site-packages) imported since `before` (in a child: by the
    job), for the zygote to preload."""
    names = []
    for name, module in list(sys.modules.items()):
        if name in before:  # (first: a module's attributes may be lazy, and there are thousands)
            continue
        path = getattr(module, "__file__", None)
        if isinstance(path, str) and ("site-packages" in path or "dist-packages" in path):
            names.append(name)
    return sorted(names)[:5000]


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))
