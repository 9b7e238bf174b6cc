"""ExportService: the server side's one way to get an ExportResult for a TargetSpec.

Both `onnxlens check` and the language server use it, so CI and the editor run one code path.

BOOTSTRAP VERSION: one fresh `python -m onnxlens.exporter.run_job` process per job, no cache.
The warm fork server and the result cache replace the body, keeping this interface.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any, Callable

import msgpack

from onnxlens.exporter.types import ExportResult, TargetSpec

EventSink = Callable[[dict[str, Any]], None]


class ExportService:
    def __init__(self, *, jobs: int = 1, use_cache: bool = True, python: str | None = None) -> None:
        self.jobs = jobs
        self.use_cache = use_cache
        self.python = python or sys.executable
        self._slots = asyncio.Semaphore(jobs)

    async def start(self) -> None:
        """Start the worker in the background; returns at once."""

    async def export(self, spec: TargetSpec, on_event: EventSink | None = None) -> ExportResult:
        """Export one target. Cancelling the awaiting task kills the job."""
        async with self._slots:
            process = await asyncio.create_subprocess_exec(
                self.python, "-m", "onnxlens.exporter.run_job",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            )
            try:
                out, _ = await process.communicate(msgpack.packb(spec.to_dict()))
            except asyncio.CancelledError:
                process.kill()
                await process.wait()
                raise
            return ExportResult.from_dict(msgpack.unpackb(out))

    async def shutdown(self) -> None:
        """Stop the worker and every job; no process is left behind."""
