"""The language server's export service: one ExportService at a time, made when the workspace
opens (cached results need no worker), its worker started in the background, replaced by
`onnxlens.restartWorker`. Exports wait until the worker has started (or failed to); nothing
else does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from onnxlens.exporter.types import ExportedGraph, ExportResult, TargetSpec
from onnxlens.server.service.events import EventSink
from onnxlens.server.service.exports import ExportService


class ServiceSlot:
    def __init__(self) -> None:
        self.current: ExportService | None = None
        self._ready = asyncio.Event()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def worker_pid(self) -> int | None:
        worker = self.current.worker if self.current is not None else None
        return worker.pid if worker is not None else None

    def create(self, *, jobs: int) -> None:
        """An ExportService, if there is none: it answers from the cache before its worker runs."""
        if self.current is None:
            self.current = ExportService(jobs=jobs)

    async def start(self, *, jobs: int) -> None:
        """Start the worker (a new service with `jobs` if there is none); raises if it cannot.
        Exports waiting for it go on either way: a worker that did not start fails them visibly."""
        self._ready.clear()
        self.create(jobs=jobs)
        try:
            await self.current.start()  # type: ignore[union-attr]
        finally:
            self._ready.set()

    async def stop(self) -> None:
        """Stop the worker and drop the service (the next `start` makes a new one)."""
        self._ready.clear()
        service, self.current = self.current, None
        if service is not None:
            await service.shutdown()

    async def worker_adapter(self) -> dict:
        """The adapter of torch's internals the worker uses, once it is warm ({name, fallback},
        exporter/wire/frames.py: Ready); {} if it never warms up."""
        worker = self.current.worker if self.current is not None else None
        if worker is None:
            return {}
        try:
            await worker.wait_ready()
        except Exception:  # noqa: BLE001 - a worker that did not start says so itself
            return {}
        return worker.adapter

    async def version_lines(self, *, jobs: int) -> list[str]:
        """What `onnxlens --version` says for this service's worker (read in a thread: another
        interpreter is asked in a subprocess)."""
        self.create(jobs=jobs)
        return await asyncio.to_thread(self.current.version_lines)  # type: ignore[union-attr]

    def cached(self, spec: TargetSpec) -> ExportResult | None:
        return self.current.cached(spec) if self.current is not None else None

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def export(self, spec: TargetSpec, on_event: EventSink, *, use_cache: bool | None,
                     previous: ExportedGraph | None = None,
                     on_saved: Callable[[ExportResult], None] | None = None) -> ExportResult:
        await self._ready.wait()
        if self.current is None:
            raise RuntimeError("the export service was stopped")
        return await self.current.export(spec, on_event, use_cache=use_cache, previous=previous, on_saved=on_saved)
