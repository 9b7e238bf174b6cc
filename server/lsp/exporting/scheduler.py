"""When to export: debounce triggers per target, run at most one job per target, and let a newer
trigger cancel the running job. Runs one export end to end: progress, the service, findings the
job sends ahead of its result, then the result and the export's status go to the callbacks the
session gave (`on_findings`, `on_result`, `on_status`). A saved export's result goes to them as
soon as it is saved (its status `verifying`), and the completed one when its verification ends;
a newer trigger then cancels only the verification.

Everything here runs on the server's event loop; the export itself is a worker process, so the
loop stays free to answer hovers and code actions while a job runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from onnxlens.exporter.events import FindingsEvent, StageEvent
from onnxlens.exporter.types import ExportResult
from onnxlens.server.lsp.exporting.progress import Progress
from onnxlens.server.lsp.exporting.project import Project
from onnxlens.server.lsp.exporting.service import ServiceSlot
from onnxlens.server.lsp.exporting.status import ExportStatus
from onnxlens.server.lsp.settings import Settings
from onnxlens.server.service.events import CachedEvent, ProgressEvent

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (project key, target name)
# The finished export's result, for the target of the project; `reason`: what triggered it (None:
# a cached result shown without a job).
ResultSink = Callable[[Project, str, ExportResult, "str | None"], None]
StatusSink = Callable[[ExportStatus], None]
# Findings the running export of the target sent ahead of its result; None: the export ended
# without a result (cancelled), and what it sent is withdrawn.
FindingsSink = Callable[[Project, str, "FindingsEvent | None"], None]
ProgressStarter = Callable[..., Awaitable[Progress]]  # Client.begin_progress


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


def progress_message(event: ProgressEvent) -> str | None:
    """A progress message for an export event; None for events with nothing to show (a stage's
    end, a pipeline log line, the user code's output)."""
    match event:
        case StageEvent(stage=stage, state="begin"):
            return stage
        case CachedEvent():
            return "cached"
    return None


@dataclass
class _Pending:
    """A request waiting for its debounce to end (several triggers coalesce into one)."""

    timer: asyncio.TimerHandle
    reason: str  # the latest trigger's
    force: bool  # some trigger asked for a real export, not the cached result (the user asked)
    # Only saves, disk changes or config edits asked: `exportOnSave` governs it until it starts
    # (a disk event may be read before a settings change sent earlier, and must not export once
    # the setting says no).
    automatic: bool
    # No save or disk change of the target came in the debounce time before this burst began:
    # an editor save of it may export at once (`promote`).
    first: bool


class ExportScheduler:
    def __init__(self, *, settings: Callable[[], Settings], service: ServiceSlot, begin_progress: ProgressStarter,
                 on_result: ResultSink, on_status: StatusSink, on_findings: FindingsSink) -> None:
        """`settings`: the current editor settings (debounce, verify); `on_result` is called before
        the export's progress ends (diagnostics come first: the contract), `on_status` when an
        export begins, enters a stage and ends, `on_findings` when the running export sends
        findings ahead of its result, and once more (None) if it is cancelled after it did."""
        self._settings = settings
        self._service = service
        self._begin_progress = begin_progress
        self._on_result = on_result
        self._on_status = on_status
        self._on_findings = on_findings
        self._pending: dict[Key, _Pending] = {}
        self._jobs: dict[Key, asyncio.Task] = {}
        self._requested_at: dict[Key, float] = {}  # the last trigger's time, for the stats
        self._automatic_at: dict[Key, float] = {}  # the last save's or disk change's: bursts
        self.stats = ExportStats()

    def request(self, project: Project, target: str, reason: str, *, delay_s: float | None = None,
                force: bool = False, automatic: bool = False, leading: bool = False) -> None:
        """Export `target` once the triggers stop for the debounce time.

        `force`: export even if the cache has a result for the current files (the user asked).
        `automatic`: a save, disk change or config edit asked, not the user: dropped if
        `exportOnSave` is off when the debounce ends.
        `leading`: an explicit save: when no save or disk change of the target came in the debounce
        time before it, it exports at once (the user is waiting for it); the saves and changes
        that follow within the debounce time (a save-all, a formatter's second save, a burst) are
        debounced as usual.
        """
        key = (project.key, target)
        now = time.perf_counter()
        debounce_s = self._settings().debounce_ms / 1000
        quiet_before = now - self._automatic_at.get(key, float("-inf")) >= debounce_s
        self.stats.triggers += 1
        self._requested_at[key] = now
        if automatic:
            self._automatic_at[key] = now
        first = quiet_before
        if (earlier := self._pending.pop(key, None)) is not None:
            earlier.timer.cancel()
            force = force or earlier.force
            automatic = automatic and earlier.automatic
            first = first or earlier.first
        if delay_s is None:
            delay_s = 0.0 if leading and first else debounce_s
        timer = asyncio.get_running_loop().call_later(delay_s, self._fire, project, target)
        self._pending[key] = _Pending(timer, reason, force, automatic, first)
        log.debug("export of %s requested (%s)", target, reason)

    def promote(self, project: Project, target: str, reason: str) -> None:
        """An editor save whose file-system event came first (and was debounced): export at once
        if that event began its burst, as the save would have."""
        key = (project.key, target)
        pending = self._pending.get(key)
        if pending is not None and pending.first:
            pending.timer.cancel()
            pending.reason = reason
            pending.timer = asyncio.get_running_loop().call_later(0, self._fire, project, target)

    def pending_targets(self) -> list[str]:
        """Targets whose trigger waits for its debounce time to end."""
        return sorted(target for _, target in self._pending)

    def is_busy(self, project: Project, target: str) -> bool:
        key = (project.key, target)
        return key in self._pending or (key in self._jobs and not self._jobs[key].done())

    def cancel(self, project: Project, target: str) -> None:
        key = (project.key, target)
        if (pending := self._pending.pop(key, None)) is not None:
            pending.timer.cancel()
        if (job := self._jobs.get(key)) is not None and not job.done():
            job.cancel()

    async def cancel_all(self) -> None:
        for pending in self._pending.values():
            pending.timer.cancel()
        self._pending.clear()
        jobs = [job for job in self._jobs.values() if not job.done()]
        for job in jobs:
            job.cancel()
        if jobs:
            await asyncio.wait(jobs)

    def show_cached(self, project: Project, target: str, result: ExportResult) -> None:
        """Use a result the service already had: no job, no progress."""
        state = project.targets.get(target)
        if state is None:
            return
        self.stats.count(target, "cached")
        self._on_result(project, target, result, None)
        self._on_status(ExportStatus.of_result(result, state.change))

    def _fire(self, project: Project, target: str) -> None:
        key = (project.key, target)
        pending = self._pending.pop(key)
        if pending.automatic and not self._settings().export_on_save:
            log.debug("export of %s dropped: exportOnSave is off (%s)", target, pending.reason)
            return
        previous = self._jobs.get(key)
        if previous is not None and not previous.done():
            previous.cancel()  # the newer content wins; the service kills the old job's process
        job = asyncio.ensure_future(self._run(project, target, previous, pending.reason, pending.force))
        self._jobs[key] = job
        job.add_done_callback(lambda done: self._forget(key, done))

    def _forget(self, key: Key, job: asyncio.Task) -> None:
        if self._jobs.get(key) is job:
            del self._jobs[key]
        if not job.cancelled() and (error := job.exception()) is not None:
            log.error("export job %s failed in the server: %r", key[1], error, exc_info=error)

    async def _run(self, project: Project, target: str, previous: asyncio.Task | None, reason: str,
                   force: bool) -> None:
        if previous is not None:
            await asyncio.wait([previous])  # one job per target: let the old one's process die first
        await self._service.wait_ready()
        state = project.targets.get(target)
        if state is None:
            return  # the target went away (config edit) while the trigger waited
        spec = self._settings().applied_to(state.spec)

        job = asyncio.current_task()
        progress = await self._begin_progress(spec.name, cancellable=True, on_cancel=job.cancel)
        self.stats.count(spec.name, "started")
        state.running = True
        self._on_status(ExportStatus(target=spec.name, state="exporting"))
        started = time.perf_counter()
        running = True  # a cancelled job's process may still send events: they are not shown
        first_findings: float | None = None  # seconds from the start to the first findings shown
        saved: ExportResult | None = None  # the saved export's result, shown while it is verified
        saved_seconds: float | None = None

        def on_saved(result: ExportResult) -> None:
            nonlocal saved, saved_seconds
            if not running:
                return
            saved, saved_seconds = result, time.perf_counter() - started
            self._on_result(project, spec.name, result, reason)  # records it: state.change is its change
            self._on_status(ExportStatus.of_result(result, state.change, verifying=True))

        def on_event(event: ProgressEvent) -> None:
            nonlocal first_findings
            if not running:
                return
            if (message := progress_message(event)) is not None:
                progress.report(message)
            if isinstance(event, StageEvent) and event.state == "begin" and saved is None:
                # (once the saved result is shown, its status says `verifying` until the end)
                self._on_status(ExportStatus(target=spec.name, state="exporting", stage=event.stage))
            if isinstance(event, FindingsEvent):
                if first_findings is None and event.findings:
                    first_findings = time.perf_counter() - started
                self._on_findings(project, spec.name, event)

        try:
            result = await self._service.export(spec, on_event, use_cache=False if force else None,
                                                previous=state.graph, on_saved=on_saved)
        except asyncio.CancelledError:
            running = False
            self.stats.count(spec.name, "cancelled")
            if saved is not None:  # the export is saved and shown; only its verification stops
                shown = ExportStatus.of_result(saved, state.change)
                self._on_status(shown)
                progress.end(f"{shown.summary} (not verified: cancelled)")
                raise
            self._on_findings(project, spec.name, None)
            cancelled = ExportStatus(target=spec.name, state="cancelled", summary=f"{spec.name}: cancelled")
            self._on_status(cancelled)
            progress.end(cancelled.summary)
            raise
        except Exception as error:  # noqa: BLE001 - a broken service becomes a diagnostic, not a dead server
            log.exception("export service failed for %s", spec.name)
            # No location: the diagnostics put it on the target's definition.
            result = ExportResult.failure(spec.name, "crash",
                                          f"the export service failed: {type(error).__name__}: {error}")
        finally:
            running = False
            state.running = False
        service_seconds = time.perf_counter() - started

        self._on_result(project, spec.name, result, reason)  # before the progress ends: the contract
        self.stats.count(spec.name, "finished")
        self.stats.last[spec.name] = {
            "reason": reason, "status": result.status, "job_seconds": result.seconds, "stages": result.stages,
            "service_seconds": service_seconds, "cached": result.cached,
            # from the service call to the first findings shown ahead of the result (None: none were)
            "first_findings_seconds": first_findings,
            # from the service call to the saved export's result shown, before its verification
            # ended (None: the result came complete)
            "saved_seconds": saved_seconds,
            # from the last trigger (minus the debounce) to the diagnostics written: what the
            # server adds around the service is this minus service_seconds.
            "trigger_to_publish_seconds": time.perf_counter() - self._requested_at.get((project.key, target), started),
            "debounce_seconds": self._settings().debounce_ms / 1000,
        }
        status = ExportStatus.of_result(result, state.change)  # on_result compared the graphs
        self._on_status(status)
        progress.end(status.summary)
