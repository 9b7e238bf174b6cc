"""The server's client of one export worker process (exporter/worker/zygote.py). asyncio; no torch.

`Worker` starts `python -m onnxlens.exporter.worker.zygote` with the user's interpreter and
environment, never in the workspace (exporter/launch.py), sends it jobs as msgpack frames and routes its replies to the waiting jobs. The
zygote supervises the children (deadlines, crashes); this side cancels jobs, notices a zygote
that died (every job in flight then fails with WorkerDied) or stopped answering, and stops it.
Restarting is the caller's decision (server/service/exports.py).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import json
import logging
import os
import signal
from dataclasses import dataclass, field
from typing import Any, Callable

from onnxlens.exporter.events import event_from_dict
from onnxlens.exporter.launch import SAFE_PATH_VARIABLE, WORKING_DIRECTORY, interpreter_environment
from onnxlens.exporter.wire import frames
from onnxlens.exporter.wire.frames import hello_problem, pack_payload, unpack_payload
from onnxlens.exporter.wire.protocol import (
    PRELOAD_DENY_VARIABLE,
    THREAD_VARIABLES,
    USER_ENV_VARIABLE,
    ProtocolError,
    read_frame_async,
    write_frame_async,
)
from onnxlens.exporter.types import ExportedGraph, ExportResult, TargetSpec
from onnxlens.server.service.events import EventSink, OutputEvent, ProgressEvent

log = logging.getLogger("onnxlens.worker")

# A saved export's result, sent before its verification ends (the zygote's `result` message
# with `completes`): the caller may show it while `run` waits for the completed result.
ResultSink = Callable[[ExportResult], None]

STDERR_KEPT = 100  # lines of the zygote's stderr kept to explain a failed start
STOP_GRACE = 5.0  # seconds the zygote gets to kill its children and exit before SIGKILL
CANCEL_GRACE = 10.0  # seconds to wait for the zygote to confirm a cancelled child is gone
START_GRACE = 120.0  # seconds for the zygote to fork a job's child (it may be preloading)
# A job's result is overdue (the zygote itself stopped answering) this long after the job's
# own timeout, which the zygote enforces on the child.
UNRESPONSIVE_GRACE = 30.0


class WorkerUnavailable(Exception):
    """The worker could not start (or refused to talk). `permanent`: retrying will not help."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class WorkerDied(Exception):
    """The zygote ended while the job was in flight."""


class WorkerUnresponsive(Exception):
    """The zygote stopped answering for a job well past the job's own time limit."""


@dataclass
class JobEnd:
    """The zygote's last word on a job: its result; for a saved export (`completes`), the
    completed one, or, when the child ended before it completed, the saved one (`saved`, with
    `result` None) and why (`reason`)."""

    result: ExportResult | None
    saved: ExportResult | None = None
    reason: str | None = None


@dataclass
class _Job:
    on_event: EventSink
    on_result: ResultSink | None = None
    # The `result` frame (its result decoded: the payload's one decoding), then the `completed` one.
    result: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    completed: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    exited: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    started: asyncio.Future = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    pid: int | None = None


def worker_environment(base: dict[str, str] | None = None,
                       preload_deny: set[str] | frozenset[str] = frozenset()) -> dict[str, str]:
    """The user's environment, with the zygote's thread discipline and a safe sys.path
    (exporter/launch.py); the user's own values of what is changed travel along for the
    children to restore."""
    user = dict(os.environ if base is None else base)
    env = interpreter_environment(user)
    if preload_deny:
        denied = set(filter(None, env.get(PRELOAD_DENY_VARIABLE, "").split(","))) | set(preload_deny)
        env[PRELOAD_DENY_VARIABLE] = ",".join(sorted(denied))
    env[USER_ENV_VARIABLE] = json.dumps({name: user.get(name) for name in (*THREAD_VARIABLES, SAFE_PATH_VARIABLE)})
    for name in THREAD_VARIABLES:
        env[name] = "1"
    return env


class Worker:
    """One zygote process and the jobs in flight on it."""

    def __init__(self, python: str, *, env: dict[str, str] | None = None,
                 preload_deny: set[str] | None = None) -> None:
        """`preload_deny`: packages the zygote must not preload; a retiring zygote adds the
        package that made it retire (the caller shares the set between its workers)."""
        self.python = os.path.abspath(python)  # the zygote starts in another directory
        self.preload_deny = preload_deny if preload_deny is not None else set()
        self.env = worker_environment(env, self.preload_deny)
        self.retiring = False  # still finishing its jobs, but takes no new ones
        self.preloaded_modules = 0
        # The `exited` frames of the last jobs: CPU seconds and peak RSS of each child.
        self.recent_exits: collections.deque[frames.Exited] = collections.deque(maxlen=100)
        self.exit_count = 0
        self.process: asyncio.subprocess.Process | None = None
        self.versions: dict[str, str | None] = {}
        # The adapter of torch's internals the zygote uses: {"name", "fallback"} (frames.Ready).
        self.adapter: dict[str, str | None] = {}
        self._jobs: dict[int, _Job] = {}
        self._ids = itertools.count(1)
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_KEPT)
        self._hello: asyncio.Future | None = None
        self._ready: asyncio.Future | None = None
        self._tasks: list[asyncio.Task] = []  # the readers of the zygote's stdout and stderr
        self._stopping: asyncio.Task | None = None
        self._end: str | None = None  # why the zygote is gone, once it is

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def alive(self) -> bool:
        return self.process is not None and self._end is None

    @property
    def usable(self) -> bool:
        """Alive and taking new jobs."""
        return self.alive and not self.retiring

    def child_pids(self) -> list[int]:
        return [job.pid for job in self._jobs.values() if job.pid is not None]

    async def start(self) -> None:
        """Spawn the zygote (returns at once; `wait_ready` waits for its warm-up)."""
        loop = asyncio.get_running_loop()
        self._hello = loop.create_future()
        self._ready = loop.create_future()
        try:
            self.process = await asyncio.create_subprocess_exec(
                self.python, "-m", "onnxlens.exporter.worker.zygote",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=WORKING_DIRECTORY, env=self.env,
            )
        except OSError as error:
            self._end = f"could not run {self.python}: {error}"
            self._fail_start(WorkerUnavailable(f"the export worker {self._end}", permanent=True))
            return
        self._tasks = [asyncio.create_task(self._read_replies()),
                       asyncio.create_task(self._read_stderr())]

    async def wait_ready(self) -> None:
        """Wait until the zygote is warm. Raises WorkerUnavailable if it will never be."""
        assert self._ready is not None, "start() first"
        await asyncio.shield(self._ready)

    async def run(self, spec: TargetSpec, on_event: EventSink, *, threads: int = 1,
                  previous: ExportedGraph | None = None, on_result: ResultSink | None = None,
                  exited: asyncio.Future | None = None) -> JobEnd:
        """Run one job; returns the zygote's last word on it (`JobEnd`). The result of a saved
        export (`completes`) goes to `on_result` first, while verification runs. Cancelling
        kills the child.

        `previous`: the target's previous export's graph (its report says what changed).
        `exited`, when given, gets the job's `Exited` frame (CPU seconds, peak memory) once its
        process is gone, or None when the zygote died first (after the result, a child may still
        be writing its report).
        """
        if not self.alive:
            raise WorkerDied(self._end or "the export worker is not running")
        job_id = next(self._ids)
        job = _Job(on_event=on_event, on_result=on_result)
        if exited is not None:
            job.exited.add_done_callback(lambda done: exited.done() or exited.set_result(done.result()))
        self._jobs[job_id] = job
        try:
            await self._send(frames.Job(id=job_id, spec=spec, threads=threads,
                                        previous=pack_payload(previous) if previous is not None else None))
            try:
                # The zygote forks at once, unless it is importing libraries for a moment.
                await asyncio.wait_for(asyncio.shield(job.started), START_GRACE)
            except asyncio.TimeoutError:
                raise WorkerUnresponsive(
                    f"the export worker did not start the job within {START_GRACE:g} s") from None
            try:
                said, result = await asyncio.wait_for(asyncio.shield(job.result),
                                                      spec.timeout + UNRESPONSIVE_GRACE)
            except asyncio.TimeoutError:
                raise WorkerUnresponsive(
                    f"the export worker did not answer within {spec.timeout + UNRESPONSIVE_GRACE:g} s"
                ) from None
            if said.cancelled or result is None:  # not by us: the worker is shutting down
                raise WorkerDied("the export worker was stopped while the job ran")
            if not said.completes:
                return JobEnd(result)
            try:
                completed, verified = await asyncio.wait_for(asyncio.shield(job.completed),
                                                             spec.timeout + UNRESPONSIVE_GRACE)
            except asyncio.TimeoutError:
                return JobEnd(None, saved=result, reason="the export worker stopped answering while verifying")
            except WorkerDied as error:  # the saved export stands; its verification is lost
                return JobEnd(None, saved=result, reason=str(error))
            if verified is None:
                return JobEnd(None, saved=result, reason=completed.reason)
            return JobEnd(verified)
        except asyncio.CancelledError:
            await self._cancel(job_id, job)
            raise
        finally:
            if job.exited.done() or not self.alive:
                self._jobs.pop(job_id, None)

    async def _cancel(self, job_id: int, job: _Job) -> None:
        """Ask the zygote to kill the job's child and wait until it has been reaped."""
        if not self.alive or job.exited.done():
            return
        with contextlib.suppress(Exception):
            await self._send(frames.Cancel(id=job_id))
        try:
            await asyncio.wait_for(asyncio.shield(job.exited), CANCEL_GRACE)
        except (asyncio.TimeoutError, WorkerDied):
            if job.pid is not None:  # the zygote did not manage: do it ourselves
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(job.pid, signal.SIGKILL)

    async def _send(self, frame: frames.Frame) -> None:
        assert self.process is not None and self.process.stdin is not None
        try:
            write_frame_async(self.process.stdin, frame.encode())
            await self.process.stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as error:
            raise WorkerDied(self._end or f"the export worker's pipe closed: {error}") from None

    async def stop(self) -> None:
        """Shut the zygote down (it kills its children first); SIGKILL if it does not exit."""
        process = self.process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(Exception):
                await self._send(frames.Shutdown())
            if process.stdin is not None:
                process.stdin.close()
            try:
                await asyncio.wait_for(process.wait(), STOP_GRACE)
            except asyncio.TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
                for pid in self.child_pids():  # their PDEATHSIG fires anyway; be explicit
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(pid, signal.SIGKILL)
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(task, STOP_GRACE)

    async def kill(self) -> None:
        """Kill the zygote at once (it stopped answering); its children die with it."""
        if self.process is not None and self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        await self.stop()

    # ---- replies -------------------------------------------------------------------------

    async def _read_replies(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        problem = None
        try:
            while (body := await read_frame_async(self.process.stdout)) is not None:
                self._dispatch(frames.TO_SERVER.decode(body))
        except ProtocolError as error:
            problem = f"the export worker sent an invalid frame: {error}"
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        status = await self.process.wait()
        await asyncio.sleep(0)  # let the stderr reader catch up: its last lines explain deaths
        self._end = problem or self._describe_exit(status)
        log.info("export worker %s ended: %s", self.process.pid, self._end)
        self._fail_start(WorkerUnavailable(
            f"the export worker ({self.python}) {self._end}{self._stderr_excerpt()}",
            permanent=False))
        for job in self._jobs.values():
            for future in (job.started, job.result, job.completed):
                if not future.done():
                    future.set_exception(WorkerDied(f"the export worker {self._end}"))
                    future.exception()  # retrieved: the job may wait on the other one only
            if not job.exited.done():
                job.exited.set_result(None)
        self._jobs.clear()

    def _dispatch(self, frame: frames.Frame) -> None:
        if type(frame) in self._ON_WORKER_FRAME:
            self._ON_WORKER_FRAME[type(frame)](self, frame)
            return
        job = self._jobs.get(frame.id)  # type: ignore[attr-defined]
        if job is not None:  # else a late frame of a job nobody waits for any more
            self._ON_JOB_FRAME[type(frame)](self, job, frame)

    # ---- the worker's own frames

    def _on_hello(self, hello: frames.Hello) -> None:
        problem = hello_problem(hello)
        if problem:
            self._fail_start(WorkerUnavailable(problem, permanent=True))
            self.process.kill()  # type: ignore[union-attr]
        elif not self._hello.done():  # type: ignore[union-attr]
            self._hello.set_result(hello)  # type: ignore[union-attr]

    def _on_ready(self, ready: frames.Ready) -> None:
        self.versions = ready.versions
        self.adapter = ready.adapter
        if not self._ready.done():  # type: ignore[union-attr]
            self._ready.set_result(None)  # type: ignore[union-attr]

    def _on_preloaded(self, preloaded: frames.Preloaded) -> None:
        self.preloaded_modules += preloaded.modules
        log.info("export worker preloaded %s library modules in %.2f s", preloaded.modules, preloaded.seconds)

    def _on_retire(self, retire: frames.Retire) -> None:
        log.warning("export worker %s retires: %s", self.pid, retire.reason)
        self.preload_deny.add(retire.deny)
        self.retire()

    def _on_fatal(self, fatal: frames.Fatal) -> None:
        self._fail_start(WorkerUnavailable(fatal.message, permanent=True))

    # ---- a job's frames

    def _on_started(self, job: _Job, started: frames.Started) -> None:
        job.pid = started.pid
        if not job.started.done():
            job.started.set_result(job.pid)

    def _on_event(self, job: _Job, event: frames.Event) -> None:
        progress = event_from_dict(unpack_payload(event.event))
        if progress is None:
            log.debug("ignoring an unknown export event: %r", event.event[:200])
        else:
            self._deliver(job, progress)

    def _on_log(self, job: _Job, said: frames.Log) -> None:  # what the user's code printed (stdout and stderr)
        self._deliver(job, OutputEvent(text=said.text))

    def _on_result(self, job: _Job, said: frames.Result) -> None:
        if job.result.done():
            return
        result = ExportResult.from_dict(unpack_payload(said.result)) if said.result is not None else None
        job.result.set_result((said, result))
        if said.completes and result is not None and job.on_result is not None:
            # Here, not when `run` resumes: before the events that follow it (verification's).
            try:
                job.on_result(result)
            except Exception:  # a faulty listener must not stop the replies of every job
                log.exception("export result listener failed")

    def _on_completed(self, job: _Job, completed: frames.Completed) -> None:
        if not job.completed.done():
            verified = ExportResult.from_dict(unpack_payload(completed.result)) if completed.result is not None else None
            job.completed.set_result((completed, verified))

    def _on_exited(self, job: _Job, exited: frames.Exited) -> None:
        self.recent_exits.append(exited)
        self.exit_count += 1
        if not job.exited.done():
            job.exited.set_result(exited)
        if job.result.done():
            self._jobs.pop(exited.id, None)
        self._stop_when_idle()

    _ON_WORKER_FRAME: dict[type, Callable] = {
        frames.Hello: _on_hello, frames.Ready: _on_ready, frames.Preloaded: _on_preloaded,
        frames.Retire: _on_retire, frames.Fatal: _on_fatal}
    _ON_JOB_FRAME: dict[type, Callable] = {
        frames.Started: _on_started, frames.Event: _on_event, frames.Log: _on_log, frames.Result: _on_result,
        frames.Completed: _on_completed, frames.Exited: _on_exited}

    def retire(self) -> None:
        """Take no new jobs; stop once the jobs in flight are done (the caller starts another)."""
        self.retiring = True
        self._stop_when_idle()

    def _stop_when_idle(self) -> None:
        if self.retiring and not self._jobs and self.alive and self._stopping is None:
            self._stopping = asyncio.create_task(self.stop())

    @staticmethod
    def _deliver(job: _Job, event: ProgressEvent) -> None:
        try:
            job.on_event(event)
        except Exception:  # a faulty listener must not stop the replies of every job
            log.exception("export event listener failed")

    def _fail_start(self, error: WorkerUnavailable) -> None:
        for future in (self._hello, self._ready):
            if future is not None and not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: nobody may be waiting yet

    async def _read_stderr(self) -> None:
        assert self.process is not None and self.process.stderr is not None
        pending = ""
        while chunk := await self.process.stderr.read(1 << 16):
            *lines, pending = (pending + chunk.decode("utf-8", "replace")).split("\n")
            pending = pending[-4096:]
            for line in lines:
                self._stderr.append(line[:4096])
                log.debug("worker: %s", line)
        if pending:
            self._stderr.append(pending)

    def _stderr_excerpt(self) -> str:
        lines = [line for line in self._stderr if line.strip()]
        return (": " + " | ".join(lines[-5:])) if lines else ""

    @staticmethod
    def _describe_exit(status: int | None) -> str:
        if status is None:
            return "ended"
        if status < 0:
            try:
                name = signal.Signals(-status).name
            except ValueError:
                name = f"signal {-status}"
            return f"was killed by {name}"
        return f"exited with status {status}"
