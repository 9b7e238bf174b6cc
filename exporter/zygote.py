"""The export worker's fork server ("zygote"): `python -m onnxlens.exporter.zygote`.

Started by the server (server/worker.py) as its own process, never forked from the threaded
server. It imports torch and the ONNX stack, builds the pipeline's cached tables, runs one tiny
warm-up export, freezes the heap (gc.freeze: fewer copy-on-write pages in children), and then
forks one child per job (exporter/child.py). It never runs user code, and computes with ONE
thread: an OpenMP pool does not survive fork, so a child of a parent that ran a parallel region
hangs in its first parallel op.

It talks to the server with msgpack frames (exporter/protocol.py) over its stdin/stdout, which
it moves to private descriptors first, so a library printing to stdout cannot corrupt the stream.
It supervises its children: relays their events and output, kills them on cancel and at their
deadline (after asking faulthandler for the stack, to name the line that hung), and turns a
child that died without a result into a `crash` finding. It exits when its stdin closes (the
server died or shut down), killing its children first; a child dies with it (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import codecs
import gc
import importlib
import importlib.metadata
import json
import os
import selectors
import shutil
import signal
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from typing import IO, Any

from onnxlens.exporter.crashes import crash_result, timeout_result
from onnxlens.exporter.protocol import (
    INTERNAL_ERROR_STATUS,
    PRELOAD_DENY_VARIABLE,
    PRELOAD_VARIABLE,
    PROTOCOL_VERSION,
    THREAD_VARIABLES,
    USER_ENV_VARIABLE,
    FrameReader,
    ProtocolError,
    write_frame,
)
from onnxlens.exporter.types import ExportResult, TargetSpec

VERSIONED_PACKAGES = ("torch", "onnx", "onnxscript", "onnxruntime", "onnxlens")

OUTPUT_KEPT = 64 * 1024  # tail of a child's output kept for crash messages
OUTPUT_FORWARDED = 64 * 1024  # output forwarded to the server as log frames, per job
DUMP_GRACE = 2.0  # seconds a timed-out child gets to write its stack before SIGKILL
DUMP_POLL = 0.05


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name in VERSIONED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


# Covers the ops most models use (linear, norm, attention, activations, a dynamic batch), so
# children do not pay the lazy per-op initialisation of torch.export and the decompositions.
_WARM_UP_MODEL = '''
import torch


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(8)
        self.attention = torch.nn.MultiheadAttention(8, 2, batch_first=True)
        self.linear = torch.nn.Linear(8, 8)
        self.conv = torch.nn.Conv1d(8, 8, 3, padding=1)

    def forward(self, x):
        h = self.norm(x)
        x = x + self.attention(h, h, h, need_weights=False)[0]
        x = x + torch.nn.functional.gelu(self.linear(x))
        x = x + self.conv(x.transpose(1, 2)).transpose(1, 2)
        return torch.relu(x).softmax(-1)


def inputs():
    return (torch.randn(2, 4, 8),)


def dynamic_shapes():
    return ({0: torch.export.Dim("batch", min=1, max=64)},)
'''


def warm_pipeline() -> Any:
    """Import everything a job needs and run one tiny export, so children start warm."""
    import torch

    torch.set_num_threads(1)
    import onnx  # noqa: F401 - imported here so that no child pays for it
    import onnxruntime  # noqa: F401
    import onnxscript  # noqa: F401
    import torch.onnx  # noqa: F401

    from onnxlens.exporter.pipeline import Pipeline

    pipeline = Pipeline()
    warm_up = getattr(pipeline, "warm_up", None)
    if callable(warm_up):
        warm_up()  # the pipeline's own: its tables
    _warm_up_export(pipeline)  # every stage once, verification and report included
    _stop_tqdm_monitor()
    gc.collect()
    gc.freeze()
    return pipeline


def _stop_tqdm_monitor() -> None:
    """tqdm (used by libraries during the warm-up) leaves a monitor thread; a thread holding a
    lock at fork time would leave that lock held forever in the child."""
    tqdm = sys.modules.get("tqdm")
    if tqdm is None:
        return
    tqdm.tqdm.monitor_interval = 0
    monitor = getattr(tqdm.tqdm, "monitor", None)
    if monitor is not None:
        monitor.exit()
        monitor.join(timeout=5)
        tqdm.tqdm.monitor = None


def _warm_up_export(pipeline: Any) -> None:
    """A real export of a tiny model through the pipeline (the first export in a process pays
    for lazy initialisation). Leaves nothing of the model behind: not a module, not a file."""
    directory = tempfile.mkdtemp(prefix="onnxlens-warmup-")
    path_before = list(sys.path)
    try:
        with open(os.path.join(directory, "onnxlens_warmup_model.py"), "w") as file:
            file.write(_WARM_UP_MODEL)
        spec = TargetSpec(
            name="warm-up", root=directory, model="onnxlens_warmup_model.py:Tiny",
            inputs="onnxlens_warmup_model.py:inputs",
            dynamic_shapes="onnxlens_warmup_model.py:dynamic_shapes",
            output=os.path.join(directory, "out", "warm-up.onnx"),
            report=os.path.join(directory, "out", "warm-up.md"),
        )
        result = pipeline.run(spec, lambda event: None)
        if result.status != "ok":
            print(f"onnxlens: the worker's warm-up export failed: {result.findings}", file=sys.stderr)
    finally:
        for name, module in list(sys.modules.items()):
            if (getattr(module, "__file__", None) or "").startswith(directory):
                del sys.modules[name]
        sys.path[:] = path_before
        shutil.rmtree(directory, ignore_errors=True)


@dataclass
class Job:
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
    cancelled: bool = False
    killed: bool = False
    timing_out: bool = False
    dump_mark: int = 0
    dump_size_seen: int = -1
    kill_at: float = 0.0
    imports: list[str] = field(default_factory=list)
    closure: list[str] = field(default_factory=list)  # as far as the child reported it


class Zygote:
    def __init__(self, pipeline: Any, requests_fd: int, replies_fd: int,
                 user_env: dict[str, str | None]) -> None:
        self.pipeline = pipeline
        self.requests_fd = requests_fd
        self.replies_fd = replies_fd
        self.user_env = user_env
        self.jobs: dict[int, Job] = {}
        self.requests = FrameReader()
        self.closing = False
        self.server_gone = False
        self.preload = os.environ.get(PRELOAD_VARIABLE, "1") != "0"
        self.preload_deny = set(filter(None, os.environ.get(PRELOAD_DENY_VARIABLE, "").split(",")))
        self.preload_wanted: set[str] = set()
        self.preload_failed: set[str] = set()
        self.retiring = False
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
            for key, _ in self.selector.select(self._seconds_to_next_timer()):
                key.data(key.fd)
            self._check_timers()
            self._reap()
            if self.preload_wanted and not self.jobs and not self.closing:
                self._preload()

    def _send(self, message: dict[str, Any]) -> None:
        if self.server_gone:
            return
        try:
            write_frame(self.replies_fd, message)
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
            messages = self.requests.feed(data)
        except ProtocolError as error:
            print(f"onnxlens worker: bad request stream ({error}); exiting", file=sys.stderr)
            self.selector.unregister(fd)
            self._close_all()
            return
        for message in messages:
            kind = message.get("type")
            if kind == "job" and not self.closing:
                self._start_job(message)
            elif kind == "cancel":
                job = self.jobs.get(message.get("id"))
                if job is not None:
                    self._cancel(job)
            elif kind == "shutdown":
                self._close_all()

    def _close_all(self) -> None:
        self.closing = True
        for job in self.jobs.values():
            job.cancelled = True
            self._kill(job)

    # ---- jobs ----------------------------------------------------------------------------

    def _own_fds(self) -> list[int]:
        """Descriptors a child must close: the protocol, the loop's, other jobs' pipes."""
        fds = [self.requests_fd, self.replies_fd, self.wakeup_r, self.wakeup_w, self.selector.fileno()]
        for job in self.jobs.values():
            fds += [fd for fd in (job.events_fd, job.output_fd, job.dump.fileno()) if fd is not None]
        return fds

    def _start_job(self, message: dict[str, Any]) -> None:
        if self.preload_wanted:
            # Before forking: this job then finds the libraries loaded. (Jobs still running
            # wait for their frames to be relayed meanwhile; their deadlines are not moved.)
            self._preload()
        spec = TargetSpec.from_dict(message["spec"])
        events_r, events_w = os.pipe()
        output_r, output_w = os.pipe()
        dump = tempfile.TemporaryFile()
        zygote_fds = self._own_fds() + [events_r, output_r]
        pid = os.fork()
        if pid == 0:  # the child
            try:
                from onnxlens.exporter.child import run_child

                run_child(self.pipeline, message, events_fd=events_w, output_fd=output_w,
                          dump_fd=dump.fileno(), zygote_pid=os.getppid(), zygote_fds=zygote_fds,
                          user_env=self.user_env)
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
        now = time.monotonic()
        job = Job(id=message["id"], spec=spec, pid=pid, events_fd=events_r, output_fd=output_r,
                  dump=dump, started=now, deadline=now + spec.timeout)
        self.jobs[job.id] = job
        self.selector.register(events_r, selectors.EVENT_READ, lambda fd, job=job: self._on_events(job))
        self.selector.register(output_r, selectors.EVENT_READ, lambda fd, job=job: self._on_output(job))
        self._send({"type": "started", "id": job.id, "pid": pid})

    def _on_events(self, job: Job) -> bool:
        data = _read_some(job.events_fd)
        if data is None:
            return False
        if not data:
            self._close_pipe(job, "events_fd")
            return False
        try:
            messages = job.frames.feed(data)
        except ProtocolError as error:
            print(f"onnxlens worker: job {job.id} sent garbage ({error}); killing it", file=sys.stderr)
            self._close_pipe(job, "events_fd")
            self._kill(job)
            return False
        for message in messages:
            if message.get("type") == "event":
                event = message.get("event")
                if isinstance(event, dict) and isinstance(event.get("stage"), str):
                    job.stage = event["stage"]
                    job.saving = event["stage"] == "save" and event.get("state") == "begin"
                if job.kill_after_save and not job.saving and not job.killed:
                    self._kill(job)
                if not job.cancelled:
                    self._send({"type": "event", "id": job.id, "event": event})
            elif message.get("type") == "closure":
                job.closure = [f for f in message.get("files") or [] if isinstance(f, str)]
            elif message.get("type") == "result" and not job.result_sent and not job.cancelled:
                job.result_sent = True
                job.imports = [n for n in message.get("imports") or [] if isinstance(n, str)]
                self._send({"type": "result", "id": job.id, "result": message.get("result"),
                            "cancelled": False})
        return True

    def _on_output(self, job: Job) -> bool:
        data = _read_some(job.output_fd)
        if data is None:
            return False
        if not data:
            self._close_pipe(job, "output_fd")
            return False
        job.output_tail = (job.output_tail + data)[-OUTPUT_KEPT:]
        if job.forwarded < OUTPUT_FORWARDED and not job.cancelled:
            chunk = data[: OUTPUT_FORWARDED - job.forwarded]
            job.forwarded += len(chunk)
            text = job.decoder.decode(chunk)
            if job.forwarded >= OUTPUT_FORWARDED:
                text += f"\n[onnxlens: output beyond {OUTPUT_FORWARDED // 1024} KB not shown]\n"
            if text:
                self._send({"type": "log", "id": job.id, "text": text})
        return True

    def _close_pipe(self, job: Job, name: str) -> None:
        fd = getattr(job, name)
        if fd is not None:
            self.selector.unregister(fd)
            os.close(fd)
            setattr(job, name, None)

    def _cancel(self, job: Job) -> None:
        job.cancelled = True
        self._on_events(job)  # the events it sent so far: is it saving?
        if job.saving:
            # The save renames the .onnx.data and then the .onnx; a kill between the two would
            # pair new weights with the old graph. Saving takes milliseconds: kill when it ends
            # (its deadline still applies).
            job.kill_after_save = True
        else:
            self._kill(job)

    def _kill(self, job: Job) -> None:
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
            if job.timing_out and not job.killed:
                times.append(now + DUMP_POLL)
            elif not (job.result_sent or job.killed):
                times.append(job.deadline)
        return max(0.0, min(times) - now) if times else None

    def _check_timers(self) -> None:
        now = time.monotonic()
        for job in self.jobs.values():
            if job.killed or job.result_sent:
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

    # ---- library preloading -------------------------------------------------------------

    def _preload(self) -> None:
        """Import, here, the library modules (site-packages only: never the user's code) that
        finished jobs imported, so later children find them loaded: a transformers model's
        job then skips seconds of imports. Runs when the zygote is idle or about to fork.

        A library that starts a thread on import makes this process unsafe to fork (a lock held
        by that thread at fork time stays held in the child): then we ask to be replaced."""
        names = sorted(n for n in self.preload_wanted
                       if n not in sys.modules and n not in self.preload_failed
                       and n.partition(".")[0] not in self.preload_deny)
        self.preload_wanted.clear()
        if not names:
            return
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
                self.preload_failed.add(name)  # not again
                continue
            if _thread_count() > threads:
                _stop_tqdm_monitor()
            if _thread_count() > threads:
                package = name.partition(".")[0]
                print(f"onnxlens worker: importing {name} started a thread; this worker retires",
                      file=sys.stderr)
                self.retiring = True
                self._send({"type": "retire", "deny": package,
                            "reason": f"importing {name} started a thread"})
                return
        gc.collect()
        gc.freeze()
        self._send({"type": "preloaded", "modules": loaded, "seconds": time.perf_counter() - started})

    # ---- ends of children ----------------------------------------------------------------

    def _reap(self) -> None:
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

    def _finish(self, job: Job, status: int, usage: Any) -> None:
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
            self._send({"type": "result", "id": job.id, "cancelled": result is None,
                        "result": result.to_dict() if result else None})
        job.dump.close()
        if self.preload and not self.retiring:
            self.preload_wanted.update(job.imports)
        del self.jobs[job.id]
        self._send({"type": "exited", "id": job.id, "status": status,
                    "cpu_seconds": usage.ru_utime + usage.ru_stime, "max_rss_kb": usage.ru_maxrss})


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


def _thread_count() -> int:
    return len(os.listdir("/proc/self/task"))


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
    write_frame(replies_fd, {"type": "hello", "protocol": PROTOCOL_VERSION, "pid": os.getpid(),
                             "python": sys.executable})
    started = time.perf_counter()
    try:
        pipeline = warm_pipeline()
    except BaseException as error:  # noqa: BLE001 - reported to the server as a clear message
        traceback.print_exc()
        write_frame(replies_fd, {"type": "fatal", "message": (
            f"the export worker ({sys.executable}) could not load torch and the ONNX exporter: "
            f"{type(error).__name__}: {error}")})
        return 1
    write_frame(replies_fd, {"type": "ready", "versions": package_versions(),
                             "seconds": time.perf_counter() - started})
    Zygote(pipeline, requests_fd, replies_fd, user_env).serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
