"""ExportService: the server side's one way to get an ExportResult for a TargetSpec.

Both `onnxlens check` and the language server use it, so CI and the editor run one code path:
a result from the on-disk cache if the target is unchanged (server/service/cache.py), otherwise a job
on the warm export worker (server/service/worker.py -> exporter/worker/zygote.py), at most `jobs` at once.

Failures of the machinery itself become findings on the target, never exceptions: a worker that
cannot start (no torch in the user's interpreter, another onnxlens version) is a `crash` finding
saying so; a worker that died mid-job is restarted and the job retried once.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Callable

from onnxlens.exporter import references
from onnxlens.exporter.types import ExportedGraph, ExportResult, TargetSpec, VerificationSummary
from onnxlens.exporter.versions import version_lines
from onnxlens.server.service.admission import Admission, Ticket
from onnxlens.server.service.cache import ResultCache, forget_verification
from onnxlens.server.service.events import CachedEvent, EventSink
from onnxlens.server.service.worker import Worker, WorkerDied, WorkerUnavailable, WorkerUnresponsive

log = logging.getLogger("onnxlens.exports")

# What a job is taken to need when nothing tells (no earlier export of the target, no
# `memory-limit`, no other estimate): roughly a small model's export process.
DEFAULT_JOB_MEMORY_MB = 1024.0


class ExportService:
    def __init__(self, *, jobs: int = 1, use_cache: bool = True, trust_cache: bool = False,
                 python: str | None = None, env: dict[str, str] | None = None,
                 memory_budget_mb: float | None = None, memory_estimates: dict[str, float] | None = None) -> None:
        """`python`: the user's interpreter (it needs torch and onnxlens); `env`: its
        environment (default: ours); `trust_cache`: use cached results signed by another key too
        (server/service/cache.py; `onnxlens check --trust-cache` only, never the editor).

        `memory_budget_mb`: the memory the export processes running at once may need together
        (server/service/admission.py; None: no limit), each job estimated by `memory_estimate`;
        `memory_estimates`: target -> MB its export process peaked at before (a baseline's).
        """
        self.jobs = max(1, jobs)
        self.use_cache = use_cache
        self.python = python or sys.executable
        self.env = env
        self.cache = ResultCache(self.python, env, trust_foreign=trust_cache)
        self.admission = Admission(self.jobs, memory_budget_mb)
        self.memory_estimates: dict[str, float] = dict(memory_estimates or {})
        self.peak_memory_mb: dict[str, float] = {}  # target -> its export process's peak (this service's jobs)
        self._worker: Worker | None = None
        self._retired: list[Worker] = []  # replaced, finishing their last jobs
        self._preload_deny: set[str] = set()  # shared by every worker of this service
        self._worker_installed: str | None = None  # the installed packages' fingerprint at its start
        self._worker_lock = asyncio.Lock()
        self._closed = False

    @property
    def worker(self) -> Worker | None:
        """The current worker process (for status displays and tests)."""
        return self._worker

    @property
    def threads_per_job(self) -> int:
        return max(1, (os.cpu_count() or 1) // self.jobs)

    async def start(self) -> None:
        """Start the worker in the background; returns at once."""
        await self._current_worker(await self._installed_now())

    def version_lines(self) -> list[str]:
        """onnxlens, the worker interpreter's ONNX stack, that interpreter and the torch adapter
        it selects (exporter/versions.py: what `onnxlens --version` says; no torch import)."""
        return version_lines(self.cache.versions, self.python, self.env)

    def cached(self, spec: TargetSpec) -> ExportResult | None:
        """The cached result of `spec` if its files are unchanged (fast; no worker needed)."""
        return self.cache.load(spec)

    async def export(self, spec: TargetSpec, on_event: EventSink | None = None, *,
                     use_cache: bool | None = None, previous: ExportedGraph | None = None,
                     on_saved: Callable[[ExportResult], None] | None = None) -> ExportResult:
        """Export one target; the completed result (verified). Cancelling the awaiting task
        kills the job.

        `use_cache=False` exports even when the cache has a result (an explicit "Re-export");
        None: as the service was configured. `previous`: the target's previous export's graph,
        for the report's "Change since the last export". `on_saved`: a saved export's result as
        soon as it is saved, before its verification ends (the editor shows it meanwhile).
        """
        sink = on_event or (lambda event: None)
        if self.use_cache if use_cache is None else use_cache:
            hit = self.cache.load(spec)
            if hit is not None:
                sink(CachedEvent(target=spec.name))
                return hit
        else:
            forget_verification(spec)  # a forced export verifies again (exporter/verify/reuse.py)
        ticket = await self.admission.admit(self.memory_estimate(spec))
        exited: asyncio.Future | None = None
        try:
            started_ns = time.time_ns()
            installed = await self._installed_now()
            result, exited = await self._run(spec, sink, previous, installed, on_saved)
        finally:
            ticket.release_slot()
            if exited is None:
                ticket.release_memory()
            else:  # the process holds its memory until it has written its report and exited
                exited.add_done_callback(lambda done: self._exited(spec.name, done, ticket))
        if not result.cached:
            self.cache.store(spec, result, job_started_ns=started_ns, installed=installed)
        return result

    def memory_estimate(self, spec: TargetSpec) -> float:
        """MB the target's export process is taken to need: its last export's peak, else its
        `memory-limit`, else the largest estimate known, else DEFAULT_JOB_MEMORY_MB."""
        if spec.name in self.memory_estimates:
            return self.memory_estimates[spec.name]
        if spec.memory_limit_mb:
            return float(spec.memory_limit_mb)
        return max(self.memory_estimates.values(), default=DEFAULT_JOB_MEMORY_MB)

    def _exited(self, target: str, done: asyncio.Future, ticket: Ticket) -> None:
        """A job's process is gone: learn its peak memory (the kernel's peak resident size of the
        process, pages shared with the zygote included) and give its memory back."""
        exited = None if done.cancelled() else done.result()
        if exited is not None and exited.max_rss_kb:
            self.peak_memory_mb[target] = self.memory_estimates[target] = exited.max_rss_kb / 1024
        ticket.release_memory()

    async def shutdown(self) -> None:
        """Stop the worker and every job; no process is left behind."""
        self._closed = True
        async with self._worker_lock:
            workers = [w for w in (self._worker, *self._retired) if w is not None]
            self._worker, self._retired = None, []
        for worker in workers:
            await worker.stop()

    # ---- internals -----------------------------------------------------------------------

    async def _installed_now(self) -> str | None:
        """The installed packages' fingerprint (server/service/installed.py; the first call asks the
        interpreter in a subprocess: off the event loop)."""
        return await asyncio.to_thread(self.cache.installed.fingerprint)

    async def _current_worker(self, installed: str | None) -> Worker:
        """A worker started under the installed packages `installed` (their fingerprint). One
        started before they changed is retired: its zygote holds the libraries it preloaded as
        they were, and the jobs it forks would run them."""
        async with self._worker_lock:
            if self._worker is not None and self._worker.usable and self._worker_installed != installed:
                log.info("the installed packages changed: a new export worker replaces %s", self._worker.pid)
                self._worker.retire()
            if self._worker is None or not self._worker.usable:
                old = self._worker
                if old is not None and old.retiring and old.alive:
                    self._retired.append(old)  # it stops itself once its jobs are done
                elif old is not None:
                    await old.stop()  # reap the dead one
                self._retired = [w for w in self._retired if w.alive]
                self._worker = Worker(self.python, env=self.env,
                                      preload_deny=self._preload_deny)
                self._worker_installed = installed
                await self._worker.start()
            return self._worker

    async def _run(self, spec: TargetSpec, sink: EventSink, previous: ExportedGraph | None, installed: str | None,
                   on_saved: Callable[[ExportResult], None] | None) -> tuple[ExportResult, asyncio.Future | None]:
        """The result, and the future of the job's `exited` frame when a process ran it, on a
        worker started under the installed packages `installed`; `previous`: as for `export`; a
        saved export's result goes to `on_saved` before its verification ends."""
        problem = "the export worker is not running"
        for attempt in (1, 2):
            if self._closed:
                return _worker_failure(spec, "the export service was shut down"), None
            worker = await self._current_worker(installed)
            exited: asyncio.Future = asyncio.get_running_loop().create_future()
            try:
                await worker.wait_ready()
                end = await worker.run(spec, sink, threads=self.threads_per_job, previous=previous, exited=exited,
                                       on_result=on_saved)
            except WorkerUnavailable as error:
                if error.permanent:
                    return _worker_failure(spec, str(error)), None
                problem = str(error)
            except WorkerDied as error:
                problem = str(error)
            except WorkerUnresponsive as error:
                await worker.kill()
                return _worker_failure(spec, str(error), code="timeout"), None
            else:
                if end.result is None:  # (then `saved` is the saved export)
                    return _not_verified(end.saved, end.reason), exited
                return end.result, exited
            log.warning("export of %s: %s (attempt %d)", spec.name, problem, attempt)
        return _worker_failure(spec, problem), None


def _not_verified(saved: ExportResult, reason: str | None) -> ExportResult:
    """A saved export whose verification did not complete: the saved result, saying why (a copy:
    the saved result itself went to `on_saved`, which may keep it)."""
    return dataclasses.replace(
        saved, verification=VerificationSummary(passed=False, error=f"verification did not complete: {reason}"))


def _worker_failure(spec: TargetSpec, problem: str, *, code: str = "crash") -> ExportResult:
    """A result for a job the worker could not run at all; on the model's definition."""
    return ExportResult.failure(spec.name, code, problem, location=references.model_definition(spec))
