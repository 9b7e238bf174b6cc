"""Findings for jobs whose child process did not deliver a result: timeouts and crashes.

The zygote builds these from what it could observe from outside: the child's wait status,
faulthandler's stack dump (written by the child on SIGUSR1 at a timeout, or on a fatal signal)
and the tail of what the child printed. They land where every other finding lands (the one
rule and builder of exporter/locations): on the innermost line of the user's code the process
was running, else on the model's definition. Torch-free and pure, so it is easy to test.
"""

from __future__ import annotations

import os
import signal

from onnxlens.exporter import references
from onnxlens.exporter.locations import Frame, Workspace, from_faulthandler, is_user_code, locate
from onnxlens.exporter.wire.protocol import INTERNAL_ERROR_STATUS, OUT_OF_MEMORY
from onnxlens.exporter.types import ExportResult, Finding, TargetSpec

_SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGILL": "illegal instruction",
    "SIGABRT": "aborted",
}


def running_frames(threads: list[list[Frame]], workspace: Workspace) -> list[Frame]:
    """The chain (outermost first) of the first thread that was running the user's code; else
    the current thread's (a library model's frames still say where it was)."""
    for frames in threads:
        if any(is_user_code(frame.file, workspace) for frame in frames):
            return frames
    return threads[0] if threads else []


def finding_at(code: str, message: str, stage: str, frames: list[Frame], spec: TargetSpec) -> Finding:
    """A finding on the innermost frame of the user's code, the rest of the chain related.

    Without any such frame, the finding goes on the model's definition, so it is still visible.
    """
    place = locate(frames, Workspace.of(spec), note="called from here (in {func})")
    place.at_fallback(references.model_definition(spec))
    return Finding(code=code, message=message, stage=stage, location=place.location, related=place.related,
                   source_line=place.source_line)


def describe_status(status: int) -> tuple[str, int | None]:
    """(how the process ended, signal number or None) for an os.waitpid status."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        number = -code
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        words = _SIGNAL_WORDS.get(name)
        return (f"crashed with {name} ({words})" if words else f"was killed by {name}"), number
    return f"exited with status {code} before finishing", None


def _tail_lines(output: str, count: int = 3, width: int = 300) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return " | ".join(line[:width] for line in lines[-count:])


def crash_result(spec: TargetSpec, *, status: int, dump: str, output: str, stage: str,
                 seconds: float, closure: list[str] | None = None) -> ExportResult:
    """The ExportResult of a child that died without sending one."""
    how, number = describe_status(status)
    workspace = Workspace.of(spec)
    frames = running_frames(from_faulthandler(dump), workspace)
    out_of_memory = bool(OUT_OF_MEMORY.search(dump) or OUT_OF_MEMORY.search(output))
    if out_of_memory:
        limit = f" (memory limit {spec.memory_limit_mb} MB)" if spec.memory_limit_mb else ""
        message = f"the export process ran out of memory{limit} and {how}"
    elif number == signal.SIGKILL:
        message = ("the export process was killed (SIGKILL) by something outside onnxlens; "
                   "the system's out-of-memory killer does this when memory runs out")
    elif number is None and os.waitstatus_to_exitcode(status) == INTERNAL_ERROR_STATUS:
        message = "the export process failed inside onnxlens (an internal error)"
    elif number is None:
        message = f"the export process {how}: user code called os._exit() or sys.exit()"
    else:
        message = f"the export process {how}"
    if any(is_user_code(frame.file, workspace) for frame in frames):
        message += " while running this line"
    tail = _tail_lines(output)
    if tail and not out_of_memory:
        message += f". Last output: {tail}"
    finding = finding_at("crash", message, stage, frames, spec)
    return ExportResult(target=spec.name, status="failed", findings=[finding], seconds=seconds,
                        closure=_with_frames(closure, frames, workspace))


def timeout_result(spec: TargetSpec, *, dump: str, stage: str, seconds: float,
                   closure: list[str] | None = None) -> ExportResult:
    """The ExportResult of a child killed at its deadline, on the line it was stuck in."""
    workspace = Workspace.of(spec)
    frames = running_frames(from_faulthandler(dump), workspace)
    message = f"the export did not finish within the time limit of {spec.timeout:g} s (`timeout`)"
    if any(is_user_code(frame.file, workspace) for frame in frames):
        message += "; it was running this line"
    else:
        message += f", during the {stage} stage"
    finding = finding_at("timeout", message, stage, frames, spec)
    return ExportResult(target=spec.name, status="failed", findings=[finding], seconds=seconds,
                        closure=_with_frames(closure, frames, workspace))


def _with_frames(closure: list[str] | None, frames: list[Frame], workspace: Workspace) -> list[str]:
    """The files the job had imported (as far as known), and the user's files it was running."""
    running = {os.path.abspath(f.file) for f in frames if is_user_code(f.file, workspace)}
    return sorted(set(closure or []) | running)
