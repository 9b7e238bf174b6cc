"""When to export: debounce triggers per target, run at most one job per target, and let a newer
trigger cancel the running job. Runs one export end to end (progress, service, diagnostics).

Everything here runs on the server's event loop; the export itself is a worker process, so the
loop stays free to answer hovers and code actions while a job runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from onnxlens.exporter.types import CachedEvent, ExportResult, Finding, ProgressEvent, StageEvent, TargetSpec

from .progress import Progress

if TYPE_CHECKING:
    from .project import Project, TargetState
    from .server import OnnxlensServer

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (project key, target name)


@dataclass
class ExportStats:
    """Counters the server exposes through the `onnxlens/stats` request (tests, benchmarks, debugging)."""

    triggers: int = 0  # export requests received (saves, disk changes, commands) before debouncing
    started: int = 0  # jobs handed to the export service
    finished: int = 0  # jobs that produced a result
    cancelled: int = 0  # jobs cancelled (newer trigger, client cancel, shutdown)
    cached: int = 0  # results shown from the cache without a job
    per_target: dict[str, dict[str, int]] = field(default_factory=dict)
    last: dict[str, dict[str, Any]] = field(default_factory=dict)  # target -> timings of its last job

    def count(self, target: str, what: str) -> None:
        setattr(self, what, getattr(self, what) + 1)
        counts = self.per_target.setdefault(target, {"started": 0, "finished": 0, "cancelled": 0, "cached": 0})
        counts[what] = counts.get(what, 0) + 1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def summary(result: ExportResult) -> str:
    """The one-line outcome shown at the end of the progress and in the log."""
    if result.status == "ok":
        nodes = f", {result.node_count} nodes" if result.node_count is not None else ""
        suffix = " (cached)" if result.cached else ""
        return f"{result.target}: exported in {result.seconds:.2f} s{nodes}{suffix}"
    problems = len(result.findings)
    return f"{result.target}: {problems} problem{'s' if problems != 1 else ''}"


def describe_event(event: ProgressEvent) -> str | None:
    """A progress message for an export event; None for events with nothing to show (a stage's
    end, a pipeline log line, the user code's output)."""
    match event:
        case StageEvent(stage=stage, state="begin"):
            return stage
        case CachedEvent():
            return "cached"
    return None


class ExportScheduler:
    def __init__(self, server: OnnxlensServer) -> None:
        self._server = server
        self._timers: dict[Key, asyncio.TimerHandle] = {}
        self._jobs: dict[Key, asyncio.Task] = {}
        self._requested_at: dict[Key, float] = {}  # the last trigger's time, for the stats
        self._forced: set[Key] = set()  # pending requests that must not be answered from the cache
        self.stats = ExportStats()

    def request(self, project: Project, target: str, reason: str, *, delay_s: float | None = None,
                force: bool = False) -> None:
        """Export `target` once the triggers stop for the debounce time.

        `force`: export even if the cache has a result for the current files (the user asked).
        """
        key = (project.key, target)
        if force:
            self._forced.add(key)
        self.stats.triggers += 1
        self._requested_at[key] = time.perf_counter()
        if (timer := self._timers.pop(key, None)) is not None:
            timer.cancel()
        if delay_s is None:
            delay_s = self._server.settings.debounce_ms / 1000
        loop = asyncio.get_running_loop()
        self._timers[key] = loop.call_later(delay_s, self._fire, key, reason)
        log.debug("export of %s requested (%s)", target, reason)

    def effective_spec(self, state: TargetState) -> TargetSpec:
        """The target as configured, with the editor's `verify` setting applied when it is set."""
        if self._server.settings.verify is None:
            return state.spec
        return dataclasses.replace(state.spec, verify=self._server.settings.verify)

    def is_busy(self, project: Project, target: str) -> bool:
        key = (project.key, target)
        return key in self._timers or (key in self._jobs and not self._jobs[key].done())

    def cancel(self, project: Project, target: str) -> None:
        key = (project.key, target)
        if (timer := self._timers.pop(key, None)) is not None:
            timer.cancel()
        if (job := self._jobs.get(key)) is not None and not job.done():
            job.cancel()

    async def cancel_all(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        jobs = [job for job in self._jobs.values() if not job.done()]
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.wait(jobs)

    def _fire(self, key: Key, reason: str) -> None:
        self._timers.pop(key, None)
        previous = self._jobs.get(key)
        if previous is not None and not previous.done():
            previous.cancel()  # the newer content wins; the service kills the old job's process
        force = key in self._forced
        self._forced.discard(key)
        job = asyncio.ensure_future(self._run(key, previous, reason, force))
        self._jobs[key] = job
        job.add_done_callback(lambda done: self._forget(key, done))

    def _forget(self, key: Key, job: asyncio.Task) -> None:
        if self._jobs.get(key) is job:
            del self._jobs[key]
        if not job.cancelled() and (error := job.exception()) is not None:
            log.error("export job %s failed in the server: %r", key[1], error, exc_info=error)

    async def _run(self, key: Key, previous: asyncio.Task | None, reason: str, force: bool = False) -> None:
        if previous is not None:
            await asyncio.wait([previous])  # one job per target: let the old one's process die first
        server = self._server
        project = server.projects.get(key[0])
        state = project.targets.get(key[1]) if project else None
        if project is None or state is None:
            return  # the target went away (config edit) while the trigger waited
        await server.service_ready.wait()
        spec = self.effective_spec(state)

        job = asyncio.current_task()
        progress = await Progress.begin(server, spec.name, cancellable=True, on_cancel=job.cancel)
        self.stats.count(spec.name, "started")
        state.running = True
        server.refresh_code_lens()
        started = time.perf_counter()

        def on_event(event: ProgressEvent) -> None:
            if (message := describe_event(event)) is not None:
                progress.report(message)

        try:
            result = await server.service.export(spec, on_event, use_cache=False if force else None)
        except asyncio.CancelledError:
            self.stats.count(spec.name, "cancelled")
            progress.end(f"{spec.name}: cancelled")
            server.log(logging.INFO, f"{spec.name}: export cancelled")
            raise
        except Exception as error:  # noqa: BLE001 - a broken service becomes a diagnostic, not a dead server
            log.exception("export service failed for %s", spec.name)
            result = self._service_failure(spec.name, error)
        finally:
            state.running = False
        service_seconds = time.perf_counter() - started

        state.record(result)
        server.publish_target(project, spec.name)  # before the progress ends: the contract
        self.stats.count(spec.name, "finished")
        self.stats.last[spec.name] = {
            "reason": reason, "status": result.status, "job_seconds": result.seconds,
            "service_seconds": service_seconds, "cached": result.cached,
            # from the last trigger (minus the debounce) to the diagnostics written: what the
            # server adds around the service is this minus service_seconds.
            "trigger_to_publish_seconds": time.perf_counter() - self._requested_at.get(key, started),
            "debounce_seconds": server.settings.debounce_ms / 1000,
        }
        server.refresh_code_lens()
        progress.end(summary(result))
        server.log(logging.INFO, f"{summary(result)} [{reason}]")

    def show_cached(self, project: Project, target: str, result: ExportResult) -> None:
        """Use a result the service already had: no job, no progress."""
        state = project.targets.get(target)
        if state is None:
            return
        result.cached = True
        state.record(result)
        server = self._server
        server.publish_target(project, target)
        self.stats.count(target, "cached")
        server.refresh_code_lens()
        server.log(logging.INFO, summary(result))

    def _service_failure(self, target: str, error: Exception) -> ExportResult:
        """A result for an export the service itself failed on (it should turn every failure into
        findings; this keeps the server alive if it does not). No location: the server puts it
        on the target's definition."""
        finding = Finding(code="crash", stage="load",
                          message=f"the export service failed: {type(error).__name__}: {error}")
        return ExportResult(target=target, status="failed", findings=[finding])
