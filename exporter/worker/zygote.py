"""The export worker's fork server ("zygote"): `python -m onnxlens.exporter.worker.zygote`.

Started by the server (server/service/worker.py) as its own process, never forked from the threaded
server. It imports torch and the ONNX stack, builds the pipeline's cached tables, runs one tiny
warm-up export, freezes the heap (gc.freeze: fewer copy-on-write pages in children; warmup.py),
and then forks one child per job (child.py). The zygote never runs user code and keeps torch at
ONE thread: an OpenMP pool does not survive fork, so a child of a parent that ran a parallel
region hangs in its first parallel op. (Library modules finished jobs imported are imported here
too, never the user's: preload.py.)

It talks to the server with typed frames (exporter/wire/frames.py) over its stdin/stdout, which
it moves to private descriptors first, so a library printing to stdout cannot corrupt the stream.
It supervises its children: relays their events and output, kills them on cancel and at their
deadline (after asking faulthandler for the stack, to name the line that hung), and turns a
child that died without a result into a `crash` finding. A child whose saved export's result
went first (`completes`) verifies it within the job's own time limit and sends the completed
result; if it dies or runs out of time first, the server is told why in a `completed` message
without a result. It exits when its stdin closes (the server died or shut down), killing its
children first; a child dies with it (PR_SET_PDEATHSIG).

The zygote holds each target's kept random fills (a memory file the target's children get,
pipeline/target/kept_fills.py): data only, never run, for the last `KEPT_TARGETS` targets exported,
within kept_fills.LIMIT_BYTES together.

The next job's child is forked ahead, while no job runs (`Spare`): it sets itself up and runs a
tiny export of our own (child.py), so the pages an export writes are its own before the job
comes (a child forked for a job copies them while it exports: copy-on-write), and waits. A job
takes the spare when there is one (its message, and the target's kept fills, come through a
socket); a spare forked before the zygote imported more libraries is replaced.
"""

from __future__ import annotations

import codecs
import json
import os
import selectors
import signal
import socket
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import IO, Any

from onnxlens.exporter.wire import frames
from onnxlens.exporter.wire.frames import pack_payload
from onnxlens.exporter.wire.protocol import (
    INTERNAL_ERROR_STATUS,
    PROTOCOL_VERSION,
    THREAD_VARIABLES,
    USER_ENV_VARIABLE,
    WARMING_NAME,
    FrameReader,
    ProtocolError,
    frame_of,
    write_frame,
)
from onnxlens.exporter.types import ExportResult, TargetSpec
from onnxlens.exporter.versions import installed_versions
from onnxlens.exporter.worker.child import process_name, set_process_name
from onnxlens.exporter.worker.crashes import crash_result, describe_status, timeout_result
from onnxlens.exporter.worker.preload import Preloader
from onnxlens.exporter.worker.warmup import warm_pipeline

OUTPUT_KEPT = 64 * 1024  # tail of a child's output kept for crash messages
OUTPUT_FORWARDED = 64 * 1024  # output forwarded to the server as log frames, per job
DUMP_GRACE = 2.0  # seconds a timed-out child gets to write its stack before SIGKILL
KEPT_TARGETS = 8  # targets whose random fills are kept (the least recently exported go first)
DUMP_POLL = 0.05
# A child that sent its (completed) result goes on writing the report and program dump
# (artifacts.py); it is killed if that takes longer than this (our own code, but bounded all the same).
ARTIFACTS_GRACE = 60.0


@dataclass
class Child:
    """A forked child running one job, as the zygote supervises it (pipes, deadline, state)."""

    id: int
    spec: TargetSpec
    pid: int
    events_fd: int | None
    output_fd: int | None
    dump: IO[bytes]  # unlinked temporary file the child's faulthandler writes to
    started: float
    deadline: float
    frames: FrameReader = field(default_factory=FrameReader)
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))
    output_tail: bytes = b""
    forwarded: int = 0
    stage: str = "load"
    saving: bool = False  # between the child's save-stage begin and end events
    kill_after_save: bool = False  # cancelled while saving: killed when the save ends
    result_sent: bool = False
    completes: bool = False  # its result said a completed result follows (verification runs)
    completed: bool = False  # the completed result was sent (or why there is none)
    artifacts_deadline: float = 0.0  # once the result is complete: when writing the artifacts ends
    cancelled: bool = False
    killed: bool = False
    timing_out: bool = False
    dump_mark: int = 0
    dump_size_seen: int = -1
    kill_at: float = 0.0
    imports: list[str] = field(default_factory=list)
    closure: list[str] = field(default_factory=list)  # as far as the child reported it

    @property
    def verifying(self) -> bool:
        """Its result went out and the completed one is still to come."""
        return self.result_sent and self.completes and not self.completed


@dataclass
class Spare:
    """A child forked ahead of its job, warming up or waiting for it (child.py, `run_child`)."""

    pid: int
    channel: socket.socket  # the job's message and the target's kept fills go through it
    events_fd: int
    output_fd: int
    dump: IO[bytes]
    ready: bool = False  # warmed up (it said so on its channel): a job started now waits for nothing
    listening: bool = False  # its channel is in the zygote's selector (until it says it is warm)

    def fds(self) -> list[int]:
        return [self.channel.fileno(), self.events_fd, self.output_fd, self.dump.fileno()]

    def discard(self) -> None:
        """Kill it and close this side (the zygote reaps it)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.close()

    def close(self) -> None:
        if self.channel.fileno() >= 0:
            self.channel.close()
        for fd in (self.events_fd, self.output_fd):
            os.close(fd)
        self.dump.close()


class Zygote:
    def __init__(self, pipeline: Any, requests_fd: int, replies_fd: int,
                 user_env: dict[str, str | None]) -> None:
        self.pipeline = pipeline
        self.requests_fd = requests_fd
        self.replies_fd = replies_fd
        self.user_env = user_env
        self.jobs: dict[int, Child] = {}
        # (root, target) -> the memory file of its kept random fills, least recently used first
        self.kept_fills: dict[tuple[str, str], int] = {}
        self.spare: Spare | None = None
        self.discarded: list[int] = []  # spares killed, still to be reaped
        self.requests = FrameReader()
        self.closing = False
        self.server_gone = False
        self.preloader = Preloader()
        self.selector = selectors.DefaultSelector()
        self.wakeup_r, self.wakeup_w = os.pipe()
        os.set_blocking(self.wakeup_r, False)
        os.set_blocking(self.wakeup_w, False)
        # SIGCHLD wakes the select loop (a Python-level handler must exist for the wakeup fd).
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        signal.set_wakeup_fd(self.wakeup_w, warn_on_full_buffer=False)
        os.set_blocking(requests_fd, False)
        self.selector.register(requests_fd, selectors.EVENT_READ, self._on_requests)
        self.selector.register(self.wakeup_r, selectors.EVENT_READ, self._on_wakeup)

    # ---- the loop ------------------------------------------------------------------------

    def serve(self) -> None:
        while not (self.closing and not self.jobs):
            if self.preloader.wanted and not self.jobs and not self.closing:
                self._preload()
            if (self.spare is None and not self.closing and not self.preloader.wanted
                    and all(job.result_sent for job in self.jobs.values())):
                # (while no job waits for its result: the spare's warm-up takes no job's time)
                self._fork_spare()
            for key, _ in self.selector.select(self._seconds_to_next_timer()):
                key.data(key.fd)
            self._check_timers()
            self._reap()

    def _send(self, frame: frames.Frame) -> None:
        if self.server_gone:
            return
        try:
            write_frame(self.replies_fd, frame.encode())
        except (BrokenPipeError, ConnectionResetError):
            self.server_gone = True
            self._close_all()

    def _on_wakeup(self, fd: int) -> None:
        try:
            while os.read(fd, 4096):
                pass
        except BlockingIOError:
            pass

    def _on_requests(self, fd: int) -> None:
        data = _read_some(fd)
        if data is None:
            return
        if not data:  # the server closed our stdin: it is gone or wants us gone
            self.selector.unregister(fd)
            self._close_all()
            return
        try:
            for body in self.requests.feed(data):
                request = frames.TO_ZYGOTE.decode(body)
                self._REQUESTS[type(request)](self, request, body)
        except ProtocolError as error:
            print(f"onnxlens worker: bad request stream ({error}); exiting", file=sys.stderr)
            self.selector.unregister(fd)
            self._close_all()

    def _on_job(self, request: frames.Job, body: bytes) -> None:
        if not self.closing:
            self._start_job(request, body)

    def _on_cancel(self, request: frames.Cancel, body: bytes) -> None:
        job = self.jobs.get(request.id)
        if job is not None:
            self._cancel(job)

    def _on_shutdown(self, request: frames.Shutdown, body: bytes) -> None:
        self._close_all()

    # The server's frames, by type: each handler gets the frame and its body as it came (a job's
    # is relayed to a spare unchanged).
    _REQUESTS = {frames.Job: _on_job, frames.Cancel: _on_cancel, frames.Shutdown: _on_shutdown}

    def _close_all(self) -> None:
        """Kill every running job; a child that already sent its result may finish writing
        the report of its export (within its artifacts deadline) before the zygote exits."""
        self.closing = True
        self._discard_spare()
        for job in self.jobs.values():
            if not job.result_sent or job.verifying:
                job.cancelled = True
                self._kill(job)

    # ---- jobs ----------------------------------------------------------------------------

    def _own_fds(self) -> list[int]:
        """Descriptors a child must close: the protocol, the loop's, other jobs' pipes."""
        fds = [self.requests_fd, self.replies_fd, self.wakeup_r, self.wakeup_w, self.selector.fileno(),
               *self.kept_fills.values(), *(self.spare.fds() if self.spare else [])]
        for job in self.jobs.values():
            fds += [fd for fd in (job.events_fd, job.output_fd, job.dump.fileno()) if fd is not None]
        return fds

    def _start_job(self, request: frames.Job, body: bytes) -> None:
        if self.preloader.wanted:
            # Before forking: this job then finds the libraries loaded. (Jobs still running
            # wait for their frames to be relayed meanwhile; their deadlines are not moved.)
            self._preload()
        spec = request.spec
        for earlier in self.jobs.values():
            if earlier.result_sent and not earlier.killed and earlier.spec.report == spec.report:
                # It is writing the report of the export this job supersedes: its rename must not
                # land after the new job's (atomic writes make the kill safe).
                self._kill(earlier)
        kept_fills_fd = self._kept_fills_of(spec)
        spare, self.spare = self.spare, None
        if spare is not None and not spare.ready:  # it may have said so since the loop last looked
            self._on_spare(spare.channel.fileno(), spare)
        if spare is not None and spare.ready and self._hand_over(spare, body, kept_fills_fd):
            pid, events_r, output_r, dump = spare.pid, spare.events_fd, spare.output_fd, spare.dump
        else:
            if spare is not None:
                self._discard(spare)
            pid, events_r, output_r, dump = self._fork_child(request, kept_fills_fd)
        now = time.monotonic()
        job = Child(id=request.id, spec=spec, pid=pid, events_fd=events_r, output_fd=output_r,
                  dump=dump, started=now, deadline=now + spec.timeout)
        self.jobs[job.id] = job
        self.selector.register(events_r, selectors.EVENT_READ, lambda fd, job=job: self._on_events(job))
        self.selector.register(output_r, selectors.EVENT_READ, lambda fd, job=job: self._on_output(job))
        self._send(frames.Started(id=job.id, pid=pid))

    def _fork_child(self, request: frames.Job | None,
                    kept_fills_fd: int | None = None) -> tuple[int, int, int, IO[bytes]]:
        """Fork a child for the job `request` (the target's kept fills open in it), or, with
        None, a spare (`self.spare`) whose job comes through its channel: (pid, its events pipe,
        its output pipe, its dump file). A job's child inherits the decoded frame: its spec is
        not decoded again."""
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        dump = tempfile.TemporaryFile()
        channel, spare_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM) if request is None else (None, None)
        zygote_fds = [fd for fd in self._own_fds() if fd != kept_fills_fd] + [events_r, output_r]
        name = process_name()
        if channel is not None:
            zygote_fds.append(channel.fileno())
            set_process_name(WARMING_NAME)  # the spare has its name from its first instant
        pid = -1
        try:
            pid = os.fork()
        finally:
            if pid != 0 and channel is not None:  # the zygote's own name back (fork failed too)
                set_process_name(name)
        if pid == 0:  # the child
            try:
                from onnxlens.exporter.worker.child import run_child

                run_child(self.pipeline, request, kept_fills_fd=kept_fills_fd, events_fd=events_w, output_fd=output_w,
                          dump_fd=dump.fileno(), zygote_pid=os.getppid(), zygote_fds=zygote_fds,
                          user_env=self.user_env, channel=spare_end)
            finally:
                os._exit(INTERNAL_ERROR_STATUS)
        try:
            os.setpgid(pid, pid)  # also done by the child; whichever runs first wins the race
        except OSError:
            pass
        os.close(events_w)
        os.close(output_w)
        os.set_blocking(events_r, False)
        os.set_blocking(output_r, False)
        if channel is not None:
            spare_end.close()
            self.spare = Spare(pid, channel, events_r, output_r, dump)
            channel.setblocking(False)
            self.selector.register(channel, selectors.EVENT_READ, self._on_spare)
            self.spare.listening = True
        return pid, events_r, output_r, dump

    def _on_spare(self, fd: int, spare: Spare | None = None) -> None:
        """The spare says it is warm (or its channel closed: it is gone, `_reap` sees it)."""
        spare = spare or self.spare
        if spare is None or spare.channel.fileno() != fd:
            return
        self._stop_listening(spare)
        try:
            spare.ready = spare.channel.recv(1) == b"R"
        except OSError:
            spare.ready = False

    def _fork_spare(self) -> None:
        try:
            self._fork_child(None)
        except OSError as error:  # no spare: jobs fork their own child
            print(f"onnxlens worker: no spare child ({error})", file=sys.stderr)

    def _hand_over(self, spare: Spare, body: bytes, kept_fills_fd: int | None) -> bool:
        """Give the spare its job, the server's frame as it came (the target's kept fills with
        it); False if it is gone."""
        try:
            spare.channel.setblocking(True)
            socket.send_fds(spare.channel, [frame_of(body)], [kept_fills_fd] if kept_fills_fd is not None else [])
        except OSError:
            return False
        spare.channel.close()
        return True

    def _stop_listening(self, spare: Spare) -> None:
        if spare.listening:
            self.selector.unregister(spare.channel)
            spare.listening = False

    def _discard(self, spare: Spare) -> None:
        self._stop_listening(spare)
        spare.discard()
        self.discarded.append(spare.pid)

    def _discard_spare(self) -> None:
        if self.spare is not None:
            self._discard(self.spare)
            self.spare = None

    def _kept_fills_of(self, spec: TargetSpec) -> int | None:
        """The memory file of the target's kept random fills (made on its first job)."""
        from onnxlens.exporter.pipeline.target.kept_fills import LIMIT_BYTES  # (the pipeline is loaded by now)

        key = (spec.root, spec.name)
        fd = self.kept_fills.pop(key, None)
        if fd is None:
            try:
                fd = os.memfd_create(f"onnxlens-fills-{spec.name}", os.MFD_CLOEXEC)
            except (AttributeError, OSError):  # no memfd here: nothing is kept
                return None
        self.kept_fills[key] = fd
        while len(self.kept_fills) > KEPT_TARGETS or (
                len(self.kept_fills) > 1 and sum(os.fstat(kept).st_size for kept in self.kept_fills.values()) > LIMIT_BYTES):
            os.close(self.kept_fills.pop(next(iter(self.kept_fills))))  # the least recently exported target's
        return fd

    def _read_pipe(self, job: Child, name: str) -> bytes | None:
        """What the job's pipe `name` has now: None when nothing is there yet, or at its end
        (then it is closed)."""
        data = _read_some(getattr(job, name))
        if data == b"":
            self._close_pipe(job, name)
        return data or None

    def _on_events(self, job: Child) -> bool:
        data = self._read_pipe(job, "events_fd")
        if data is None:
            return False
        try:
            for body in job.frames.feed(data):
                sent = frames.FROM_CHILD.decode(body)
                self._FROM_CHILD[type(sent)](self, job, sent)
        except ProtocolError as error:
            print(f"onnxlens worker: job {job.id} sent garbage ({error}); killing it", file=sys.stderr)
            self._close_pipe(job, "events_fd")
            self._kill(job)
            return False
        return True

    def _on_child_event(self, job: Child, sent: frames.ChildEvent) -> None:
        if sent.stage is not None:
            job.stage = sent.stage
            job.saving = sent.stage == "save" and sent.state == "begin"
        if job.kill_after_save and not job.saving and not job.killed:
            self._kill(job)
        if not job.cancelled:
            self._send(frames.Event(id=job.id, event=sent.event))

    def _on_closure(self, job: Child, sent: frames.Closure) -> None:
        job.closure = [f for f in sent.files if isinstance(f, str)]

    def _on_child_result(self, job: Child, sent: frames.ChildResult) -> None:
        if job.result_sent or job.cancelled:
            return
        job.result_sent = True
        job.completes = sent.completes is True
        job.artifacts_deadline = time.monotonic() + ARTIFACTS_GRACE
        job.imports = [n for n in sent.imports if isinstance(n, str)]
        self._send(frames.Result(id=job.id, result=sent.result, completes=job.completes))

    def _on_child_completed(self, job: Child, sent: frames.ChildCompleted) -> None:
        if job.verifying and not job.cancelled:
            self._complete(job, sent.result)

    # A child's frames, by type.
    _FROM_CHILD = {frames.ChildEvent: _on_child_event, frames.Closure: _on_closure,
                   frames.ChildResult: _on_child_result, frames.ChildCompleted: _on_child_completed}

    def _complete(self, job: Child, result: bytes | None, reason: str | None = None) -> None:
        """The completed result's payload (None: the child ended first; `reason` says how)."""
        job.completed = True
        job.artifacts_deadline = time.monotonic() + ARTIFACTS_GRACE
        self._send(frames.Completed(id=job.id, result=result, reason=reason))

    def _on_output(self, job: Child) -> bool:
        data = self._read_pipe(job, "output_fd")
        if data is None:
            return False
        job.output_tail = (job.output_tail + data)[-OUTPUT_KEPT:]
        if job.forwarded < OUTPUT_FORWARDED and not job.cancelled:
            chunk = data[: OUTPUT_FORWARDED - job.forwarded]
            job.forwarded += len(chunk)
            text = job.decoder.decode(chunk)
            if job.forwarded >= OUTPUT_FORWARDED:
                text += f"\n[onnxlens: output beyond {OUTPUT_FORWARDED // 1024} KB not shown]\n"
            if text:
                self._send(frames.Log(id=job.id, text=text))
        return True

    def _close_pipe(self, job: Child, name: str) -> None:
        fd = getattr(job, name)
        if fd is not None:
            self.selector.unregister(fd)
            os.close(fd)
            setattr(job, name, None)

    def _cancel(self, job: Child) -> None:
        job.cancelled = True
        self._on_events(job)  # the events it sent so far: is it saving?
        if job.saving:
            # A kill during the save leaves the old pair or the new one (pipeline/output/onnx_commit.py), but
            # what it staged (the size of the weights) stays on disk until the target's next
            # save. Saving takes milliseconds to seconds: kill when it ends (its deadline still
            # applies).
            job.kill_after_save = True
        else:
            self._kill(job)

    def _kill(self, job: Child) -> None:
        job.killed = True
        try:
            os.killpg(job.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        except PermissionError:  # not yet its own group leader
            os.kill(job.pid, signal.SIGKILL)

    # ---- deadlines -----------------------------------------------------------------------

    def _seconds_to_next_timer(self) -> float | None:
        now = time.monotonic()
        times = []
        for job in self.jobs.values():
            if job.killed:
                continue
            if job.timing_out:
                times.append(now + DUMP_POLL)
            else:
                times.append(job.artifacts_deadline if job.result_sent and not job.verifying else job.deadline)
        return max(0.0, min(times) - now) if times else None

    def _check_timers(self) -> None:
        now = time.monotonic()
        for job in list(self.jobs.values()):
            if job.killed:
                continue
            if job.verifying:
                if now >= job.deadline:  # verification counts toward the job's time limit
                    self._kill(job)
                    self._complete(job, None, f"verification did not end within the time limit ({job.spec.timeout:g} s)")
                continue
            if job.result_sent:
                if now >= job.artifacts_deadline:
                    self._kill(job)
                continue
            if not job.timing_out and now >= job.deadline:
                # Ask for the stack first (faulthandler in the child), then kill.
                job.timing_out = True
                job.dump_mark = os.fstat(job.dump.fileno()).st_size
                job.kill_at = now + DUMP_GRACE
                try:
                    os.kill(job.pid, signal.SIGUSR1)
                except ProcessLookupError:
                    pass
            elif job.timing_out:
                size = os.fstat(job.dump.fileno()).st_size
                if (size > job.dump_mark and size == job.dump_size_seen) or now >= job.kill_at:
                    self._kill(job)
                job.dump_size_seen = size

    # ---- library preloading (preload.py) -------------------------------------------------

    def _preload(self) -> None:
        # A library's import may register ops torchlib translates (torchvision's): the tables
        # follow here, once, rather than in every child. A spare forked before lacks them.
        self._discard_spare()
        said = self.preloader.run(after_imports=self.pipeline.refresh)
        if said is not None:
            self._send(said)

    # ---- ends of children ----------------------------------------------------------------

    def _reap(self) -> None:
        if self.spare is not None and _ended(self.spare.pid):
            os.waitpid(self.spare.pid, 0)
            self._stop_listening(self.spare)
            self.spare.close()
            self.spare = None
        for pid in [pid for pid in self.discarded if _ended(pid)]:
            os.waitpid(pid, 0)
            self.discarded.remove(pid)
        for job in list(self.jobs.values()):
            try:
                # WNOWAIT: look without reaping, so the pid (= its process group id) cannot be
                # reused before the group is killed.
                info = os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                info = None
            if info is None:
                continue
            try:
                os.killpg(job.pid, signal.SIGKILL)  # whatever the user's code left running
            except (ProcessLookupError, PermissionError):
                pass
            _, status, usage = os.wait4(job.pid, 0)
            self._finish(job, status, usage)

    def _finish(self, job: Child, status: int, usage: Any) -> None:
        # Read what the child wrote before it died (its result may be among it). A grandchild
        # still holding a pipe open must not block us: read only what is there.
        while self._on_events(job):
            pass
        while self._on_output(job):
            pass
        self._close_pipe(job, "events_fd")
        self._close_pipe(job, "output_fd")
        if not job.result_sent:
            result: ExportResult | None = None
            seconds = time.monotonic() - job.started
            output = job.output_tail.decode("utf-8", "replace")
            if job.cancelled:
                pass
            elif job.timing_out:
                dump = _read_file(job.dump, job.dump_mark)
                result = timeout_result(job.spec, dump=dump, stage=job.stage, seconds=seconds,
                                        closure=job.closure)
            else:
                dump = _read_file(job.dump, 0)
                result = crash_result(job.spec, status=status, dump=dump, output=output,
                                      stage=job.stage, seconds=seconds, closure=job.closure)
            job.result_sent = True
            self._send(frames.Result(id=job.id, cancelled=result is None,
                                     result=pack_payload(result) if result else None))
        elif job.verifying and not job.cancelled:
            how, _ = describe_status(status)
            self._complete(job, None, f"the export process {how} while verifying")
        job.dump.close()
        self.preloader.want(job.imports)
        del self.jobs[job.id]
        self._send(frames.Exited(id=job.id, status=status, cpu_seconds=usage.ru_utime + usage.ru_stime,
                                 max_rss_kb=usage.ru_maxrss))


def _ended(pid: int) -> bool:
    """The child has ended (not reaped yet)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _read_some(fd: int | None) -> bytes | None:
    """What a non-blocking fd has now: b"" at end of stream, None if nothing yet."""
    if fd is None:
        return b""
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _read_file(file: IO[bytes], offset: int) -> str:
    size = os.fstat(file.fileno()).st_size
    data = os.pread(file.fileno(), max(0, size - offset), offset) if size > offset else b""
    return data.decode("utf-8", "replace")


def _take_protocol_fds() -> tuple[int, int]:
    """Move the protocol off fds 0/1: stray prints of libraries then land on stderr."""
    requests_fd = os.dup(0)
    replies_fd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    return requests_fd, replies_fd


def _user_thread_env() -> dict[str, str | None]:
    passed = os.environ.pop(USER_ENV_VARIABLE, None)
    user_env = json.loads(passed) if passed else {name: os.environ.get(name) for name in THREAD_VARIABLES}
    for name in THREAD_VARIABLES:
        os.environ[name] = "1"  # before torch/numpy load their thread pools
    return user_env


def main() -> int:
    requests_fd, replies_fd = _take_protocol_fds()
    user_env = _user_thread_env()
    # Ctrl-C in a terminal reaches the whole process group: the server decides, not us.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    write_frame(replies_fd, frames.Hello(protocol=PROTOCOL_VERSION, pid=os.getpid(), python=sys.executable).encode())
    started = time.perf_counter()
    try:
        pipeline = warm_pipeline()
    except BaseException as error:  # noqa: BLE001 - reported to the server as a clear message
        traceback.print_exc()
        write_frame(replies_fd, frames.Fatal(message=(
            f"the export worker ({sys.executable}) could not load torch and the ONNX exporter: "
            f"{type(error).__name__}: {error}")).encode())
        return 1
    from onnxlens.exporter.torch_internals.active import FALLBACK_REASON, internals

    write_frame(replies_fd, frames.Ready(versions=installed_versions(), seconds=time.perf_counter() - started,
                                         adapter={"name": internals.NAME, "fallback": FALLBACK_REASON}).encode())
    Zygote(pipeline, requests_fd, replies_fd, user_env).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
