"""Findings for jobs whose child process did not deliver a result: timeouts and crashes.

The zygote builds these from what it could observe from outside: the child's wait status,
faulthandler's stack dump (written by the child on SIGUSR1 at a timeout, or on a fatal signal)
and the tail of what the child printed. Torch-free and pure, so it is easy to test.
"""

from __future__ import annotations

import linecache
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter.protocol import INTERNAL_ERROR_STATUS
from onnxlens.exporter.types import ExportResult, Finding, Location, Related, TargetSpec

_THREAD_HEADER = re.compile(r"^(Current thread|Thread) 0x[0-9a-fA-F]+|^Stack \(most recent call first\)")
_FRAME = re.compile(r'^\s+File "(?P<file>.+)", line (?P<line>\d+) in (?P<func>.+)$')

# What allocators say when the address-space cap (RLIMIT_AS) or the machine runs out.
OUT_OF_MEMORY = re.compile(
    r"MemoryError|can't allocate memory|Cannot allocate memory|std::bad_alloc|out of memory",
    re.IGNORECASE,
)

_SIGNAL_WORDS = {
    "SIGSEGV": "segmentation fault",
    "SIGBUS": "bus error",
    "SIGFPE": "floating-point exception",
    "SIGILL": "illegal instruction",
    "SIGABRT": "aborted",
}


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str


def parse_stack_dump(text: str) -> list[list[Frame]]:
    """faulthandler output -> one frame list per thread, innermost frame first.

    The thread that received the signal ("Current thread") comes first. After a fatal error,
    only that last dump counts.
    """
    last_fatal = text.rfind("Fatal Python error")
    if last_fatal >= 0:
        text = text[last_fatal:]
    threads: list[tuple[bool, list[Frame]]] = []
    for raw in text.splitlines():
        header = _THREAD_HEADER.match(raw)
        if header:
            threads.append((raw.startswith(("Current thread", "Stack")), []))
            continue
        frame = _FRAME.match(raw)
        if frame and threads:
            threads[-1][1].append(Frame(frame["file"], int(frame["line"]), frame["func"].strip()))
    threads.sort(key=lambda entry: not entry[0])  # stable: the current thread first
    return [frames for _, frames in threads if frames]


def is_user_file(path: str, root: str) -> bool:
    """A file of the user's workspace, not a library installed inside it (.venv, site-packages)."""
    if not path or path.startswith("<"):
        return False
    try:
        resolved = Path(path).resolve()
        resolved.relative_to(Path(root).resolve())
    except (ValueError, OSError):
        return False
    text = str(resolved)
    if "site-packages" in text or "dist-packages" in text:
        return False
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        if text.startswith(str(Path(prefix).resolve()) + os.sep):
            return False
    return True


def user_frames(threads: list[list[Frame]], root: str) -> list[Frame]:
    """The workspace frames (innermost first) of the first thread that has any."""
    for frames in threads:
        inside = [f for f in frames if is_user_file(f.file, root)]
        if inside:
            return inside
    return []


def location_of(file: str, line: int) -> tuple[Location, str | None]:
    text = linecache.getline(file, line).rstrip("\n")
    if not text.strip():
        return Location(file=file, line=line), None
    start = len(text) - len(text.lstrip())
    return Location(file=file, line=line, column=start + 1, end_line=line, end_column=len(text) + 1), text.strip()


def model_location(spec: TargetSpec) -> Location | None:
    """Where the target's model callable is defined, found by reading the file (no import)."""
    reference, _, name = spec.model.rpartition(":")
    if reference.endswith(".py"):
        path = Path(spec.root) / reference
    else:
        base = Path(spec.root, *reference.split("."))
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return None
    definition = re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b")
    for number, text in enumerate(lines, start=1):
        if definition.match(text):
            return Location(file=str(path.resolve()), line=number)
    return Location(file=str(path.resolve()), line=1)


def finding_at_frames(code: str, message: str, stage: str, frames: list[Frame],
                      spec: TargetSpec) -> Finding:
    """A finding on the innermost user frame, the outer user frames as related locations.

    Without any user frame, the finding goes on the model's definition, so it is still visible.
    """
    if not frames:
        return Finding(code=code, message=message, stage=stage, location=model_location(spec))
    location, source = location_of(frames[0].file, frames[0].line)
    related = [Related(file=f.file, line=f.line, message=f"called from here (in {f.function})")
               for f in frames[1:]]
    return Finding(code=code, message=message, stage=stage, location=location, related=related,
                   source_line=source)


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
    frames = user_frames(parse_stack_dump(dump), spec.root)
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
    if frames:
        message += " while running this line"
    tail = _tail_lines(output)
    if tail and not out_of_memory:
        message += f". Last output: {tail}"
    finding = finding_at_frames("crash", message, stage, frames, spec)
    return ExportResult(target=spec.name, status="failed", findings=[finding], seconds=seconds,
                        closure=_with_frames(closure, frames))


def timeout_result(spec: TargetSpec, *, dump: str, stage: str, seconds: float,
                   closure: list[str] | None = None) -> ExportResult:
    """The ExportResult of a child killed at its deadline, on the line it was stuck in."""
    frames = user_frames(parse_stack_dump(dump), spec.root)
    message = f"the export did not finish within the time limit of {spec.timeout:g} s (`timeout`)"
    message += "; it was running this line" if frames else f", during the {stage} stage"
    finding = finding_at_frames("timeout", message, stage, frames, spec)
    return ExportResult(target=spec.name, status="failed", findings=[finding], seconds=seconds,
                        closure=_with_frames(closure, frames))


def _with_frames(closure: list[str] | None, frames: list[Frame]) -> list[str]:
    """The files the job had imported (as far as known), and those it was running."""
    return sorted(set(closure or []) | {os.path.abspath(f.file) for f in frames})
