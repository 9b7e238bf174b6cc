"""One export job, in a child process forked from the zygote.

The child inherits the zygote's warm state (torch and the ONNX stack imported, the pipeline's
tables built) and nothing of any earlier job: it imports the user's code fresh, runs the
pipeline, streams progress frames to the zygote, sends one result frame and exits. User code
runs only here, never in the zygote; a child may raise torch's thread count (the zygote keeps
one). The pipeline's typed events and result become payloads here (wire/frames.py: only the server
decodes them).

Everything the zygote needs to explain a child that dies instead is set up here first:
faulthandler writes the stack to a file on SIGUSR1 (timeouts) and on fatal signals (crashes),
and os._exit is wrapped to write it too.

A saved export's result goes first (`completes`: a completed result follows), then the child
verifies it (Pipeline.finish) and sends the completed result, then writes the report.

A spare (forked ahead of its job, zygote.py) sets itself up the same way, then runs a tiny export
of our own and a whole job of a tiny target of ours (rehearsal.py) with their output discarded
and torch's random generator put back as it was (the job must find the zygote's state: the same
numbers for an unseeded model, whichever child runs it), and waits for its job on its channel.
"""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import os
import re
import resource
import signal
import socket
import sys
import time
import traceback
from typing import Any, NoReturn

from onnxlens.exporter.locations import Workspace, from_traceback, is_user_code
from onnxlens.exporter.pipeline.output import artifacts
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.target.code import modules_not_from_the_zygote
from onnxlens.exporter.wire import frames
from onnxlens.exporter.wire.frames import pack_payload, unpack_payload
from onnxlens.exporter.wire.protocol import INTERNAL_ERROR_STATUS, OUT_OF_MEMORY, SPARE_NAME, FrameReader, write_frame
from onnxlens.exporter.events import PipelineEvent, StageEvent, event_to_dict
from onnxlens.exporter.types import ExportedGraph, ExportResult, Finding, TargetSpec
from onnxlens.exporter.worker.crashes import finding_at
from onnxlens.exporter.worker.frame_stack import with_deep_frame_stack
from onnxlens.exporter.worker.preload import library_modules
from onnxlens.exporter.worker.rehearsal import rehearse
from onnxlens.exporter.torch_internals.active import internals

_PR_SET_PDEATHSIG = 1
_PR_SET_NAME = 15
_real_exit = os._exit


def set_process_name(name: str) -> None:
    """This process's name (its `comm`, 15 bytes at most)."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, ctypes.c_char_p(name.encode()[:15]), 0, 0, 0)


def process_name() -> str:
    with open("/proc/self/comm") as comm:
        return comm.read().strip()


def run_child(pipeline: Any, job: frames.Job | None, *, kept_fills_fd: int | None, events_fd: int, output_fd: int,
              dump_fd: int, zygote_pid: int, zygote_fds: list[int], user_env: dict[str, str | None],
              channel: socket.socket | None = None) -> NoReturn:
    """Never returns: the child ends with os._exit (no atexit handlers, no torch teardown).
    `job` None: a spare, whose job (and kept fills) come through `channel`."""
    started = time.perf_counter()
    zygote_modules = set(sys.modules)
    try:
        _detach_from_zygote(zygote_pid, zygote_fds)
        _capture_output(output_fd)
        _prepare_fault_reports(dump_fd)
        if job is None:
            _warm(pipeline)
            zygote_modules = set(sys.modules)
            channel.sendall(b"R")  # warm: the zygote may give this child a job now
            set_process_name(SPARE_NAME)
            job, kept_fills_fd = _receive_job(channel)
            if job is None:  # the zygote discarded the spare
                _real_exit(0)
            with open(f"/proc/{zygote_pid}/comm") as comm:  # a job's child, named as the zygote is
                set_process_name(comm.read().strip())
            started = time.perf_counter()
        spec = job.spec
        _restore_user_environment(user_env, job.threads, spec)
        _stop_cyclic_collection()
        result, exported = _run(pipeline, spec, events_fd, started, kept_fills_fd)
        completes = exported is not None and result.status == "ok"
        write_frame(events_fd, frames.ChildResult(result=pack_payload(result), completes=completes,
                                                  imports=library_modules(zygote_modules)).encode())
        if completes:
            # After the result: the editor shows the saved export while it is verified.
            with_deep_frame_stack(pipeline.finish, exported)
            exported.result.findings = [_as_crash(spec, finding) for finding in exported.result.findings]
            write_frame(events_fd, frames.ChildCompleted(result=pack_payload(exported.result)).encode())
        if exported is not None:
            # After the result: the editor has its diagnostics while the report is written.
            previous = ExportedGraph.from_dict(unpack_payload(job.previous)) if job.previous is not None else None
            artifacts.write(exported, previous)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the zygote turns the exit status into a crash finding
        try:
            traceback.print_exc()
            sys.stderr.flush()
        finally:
            _real_exit(INTERNAL_ERROR_STATUS)
    _real_exit(0)


def _detach_from_zygote(zygote_pid: int, zygote_fds: list[int]) -> None:
    # Own process group: a cancel or timeout kills whatever the user's code started, too.
    try:
        os.setpgid(0, 0)
    except OSError:
        pass  # the zygote already did it
    # Die with the zygote: no orphaned export running on after the editor closed.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != zygote_pid:
        _real_exit(1)  # the zygote died between fork and prctl
    for fd in zygote_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # user code may run subprocesses
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _warm(pipeline: Any) -> None:
    """A tiny export of our own (Pipeline.warm_up), then a whole job of a tiny target of ours
    (rehearsal.py: the pages a job touches copied here, not on the job's time), their output
    discarded, torch's generator as it was."""
    import torch

    state = torch.random.get_rng_state()
    sys.stdout.flush()
    sys.stderr.flush()
    kept = os.dup(1), os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        pipeline.warm_up()
        if internals.FULL:  # (the public path has no pieces of its own to warm)
            rehearse(pipeline)
    except Exception:  # noqa: BLE001 - a spare that could not warm still runs its job
        pass
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, saved in zip((1, 2), kept):
            os.dup2(saved, fd)
            os.close(saved)
        os.close(devnull)
        torch.random.set_rng_state(state)


def _receive_job(channel: socket.socket) -> tuple[frames.Job | None, int | None]:
    """The job's frame from the zygote (the server's, as it came: decoded here, once), with the
    target's kept fills descriptor (None: the zygote closed the channel)."""
    data, fds, _, _ = socket.recv_fds(channel, 1 << 16, 1)
    reader = FrameReader()
    bodies = reader.feed(data)
    while data and not bodies:
        data = channel.recv(1 << 16)
        bodies = reader.feed(data)
    channel.close()
    kept_fills_fd = fds[0] if fds else None
    if not bodies:
        return None, kept_fills_fd
    job = frames.TO_ZYGOTE.decode(bodies[0])
    if not isinstance(job, frames.Job):
        return None, kept_fills_fd
    return job, kept_fills_fd


def _capture_output(output_fd: int) -> None:
    """User prints go to a pipe the zygote drains, never to the protocol stream."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    sys.stdout.reconfigure(line_buffering=True)
    sys.stderr.reconfigure(line_buffering=True)


def _prepare_fault_reports(dump_fd: int) -> None:
    faulthandler.enable(file=dump_fd, all_threads=True)
    faulthandler.register(signal.SIGUSR1, file=dump_fd, all_threads=True, chain=False)
    me = os.getpid()

    def exit_with_stack(status: int) -> NoReturn:
        # os._exit skips every handler; leave the caller's stack so the crash finding names it.
        if os.getpid() == me:
            faulthandler.dump_traceback(file=dump_fd, all_threads=False)
        _real_exit(status)

    os._exit = exit_with_stack


def _stop_cyclic_collection() -> None:
    """No cyclic garbage collection for the job. torch.export and the translation build and drop
    graphs full of reference cycles (FX nodes and their users, fake tensors and their modes): with
    the collector on, each full collection walks every object the job has made (11 % of the 7B
    Llama's save → done). A job's child exits after its one job, which frees every cycle at once;
    the memory this keeps meanwhile is in benchmarks/REAL_SIZE.md (the child's peak RSS against
    stock's). Reference counting frees everything else as before."""
    gc.disable()


def _restore_user_environment(user_env: dict[str, str | None], threads: int, spec: TargetSpec) -> None:
    # The zygote runs with one thread (OpenMP pools do not survive fork); a child starts none
    # before this point, so it may use more. Subprocesses of user code get the user's settings.
    for name, value in user_env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    import torch

    torch.set_num_threads(max(1, int(threads)))
    os.chdir(spec.root)
    if spec.memory_limit_mb:
        # The cap is on what the job adds: the zygote's own mappings (torch's libraries) are
        # already a few GB of address space before any user code runs.
        with open("/proc/self/statm") as statm:
            current = int(statm.read().split()[0]) * resource.getpagesize()
        limit = current + spec.memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _run(pipeline: Any, spec: TargetSpec, events_fd: int, started: float,
         kept_fills_fd: int | None) -> tuple[ExportResult, Job | None]:
    """The result, and the pipeline's job whose artifacts are still to be written (None when
    the pipeline did not get as far as returning one)."""
    workspace = Workspace.of(spec)

    def on_event(event: PipelineEvent) -> None:
        # The zygote reads the stage an event names (a stage event's, a findings event's) and a
        # stage event's state; the event itself only the server reads.
        write_frame(events_fd, frames.ChildEvent(event=pack_payload(event_to_dict(event)),
                                                 stage=getattr(event, "stage", None),
                                                 state=getattr(event, "state", None)).encode())
        if isinstance(event, StageEvent) and event.stage == "load" and event.state == "end":
            # Should this job die later, the zygote still knows which files it depends on.
            write_frame(events_fd, frames.Closure(files=_imported_user_files(workspace)).encode())

    try:
        job = with_deep_frame_stack(pipeline.export, spec, on_event, kept_fills_fd=kept_fills_fd)
    except SystemExit as error:
        return _failed(spec, error, started,
                       f"user code called sys.exit({error.code!r}) during the export; the export "
                       "process cannot continue after it"), None
    except MemoryError as error:
        return _failed(spec, error, started, _out_of_memory_message(spec)), None
    except BaseException as error:  # noqa: BLE001 - a bug of ours still becomes a finding
        return _failed(spec, error, started,
                       f"internal error in onnxlens: {type(error).__name__}: {error}"[:2000]), None
    result = job.result
    result.findings = [_as_crash(spec, finding) for finding in result.findings]
    # This process imported no user code before the job, so every workspace module it holds now
    # belongs to the target: the closure, even where the pipeline did not see an import.
    result.closure = sorted(set(result.closure) | set(_imported_user_files(workspace)))
    return result, job


def _out_of_memory_message(spec: TargetSpec) -> str:
    limit = f" (memory limit {spec.memory_limit_mb} MB)" if spec.memory_limit_mb else ""
    return f"the export process ran out of memory{limit} while running this line"


_SYSTEM_EXIT = re.compile(r"\bSystemExit\b")


def _as_crash(spec: TargetSpec, finding: Finding) -> Finding:
    """Process-ending failures are crashes, whichever stage caught them: the pipeline reports
    an exception of the user's code (MemoryError, SystemExit) as that stage's finding. A
    warning ended nothing (verification that ran out of memory: the model was saved)."""
    if finding.code == "crash" or finding.severity != "error":
        return finding
    if spec.memory_limit_mb and OUT_OF_MEMORY.search(finding.message):
        message = _out_of_memory_message(spec)
    elif _SYSTEM_EXIT.search(finding.message):
        message = ("user code called sys.exit() (raised SystemExit) during the export; the export "
                   f"process cannot continue after it. ({finding.message})")
    else:
        return finding
    return Finding(code="crash", message=message, stage=finding.stage, location=finding.location,
                   related=finding.related, source_line=finding.source_line)


def _failed(spec: TargetSpec, error: BaseException, started: float, message: str) -> ExportResult:
    frames = from_traceback(error)
    finding = finding_at("crash", message, "load", frames, spec)
    workspace = Workspace.of(spec)
    running = {f.file for f in frames if is_user_code(f.file, workspace)}
    closure = sorted(running | set(_imported_user_files(workspace)))
    return ExportResult(target=spec.name, status="failed", findings=[finding],
                        seconds=time.perf_counter() - started, closure=closure)


def _imported_user_files(workspace: Workspace) -> list[str]:
    """Workspace files imported so far: the closure as far as the job got."""
    files = []
    for _, module in modules_not_from_the_zygote():
        path = getattr(module, "__file__", None)
        # Some modules carry a relative __file__ (torch.ops: "_ops.py"): not workspace files.
        if isinstance(path, str) and os.path.isabs(path) and workspace.contains(path):
            files.append(os.path.abspath(path))
    return files
