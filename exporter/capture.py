"""The capture stage: torch.export the model, and turn capture failures into findings.

We run the stock exporter's own capture strategies (non-strict, then strict) ourselves instead
of through `_core.export`, which keeps only the first error: both errors are useful, they often
blame different lines (non-strict runs Python: it fails at the first data-dependent value;
strict (dynamo) names the data-dependent branch). When a failure is data-dependent we also run
`torch.export.draft_export`, which reports every data-dependent problem in one pass. Its program
silently bakes in the branch the example input took: it is only read for its report, never
exported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
from torch.onnx._internal.exporter import _capture_strategies

from onnxlens.exporter.locations import (Frame, Workspace, frames_from_summary, is_library_file, locate,
                                          source_line)
from onnxlens.exporter.types import Finding, Fix, Location

EXPORTDB_URL = "https://pytorch.org/docs/main/generated/exportdb/index.html"
_GB_URL_RE = re.compile(r"https://\S+/gb/gb\d+\.html")
_CHECK_FIX_RE = re.compile(r"^\s*\d+\.\s*(torch\._check\(.*\))\s*$", re.MULTILINE)
_BLAME_RE = re.compile(r'The following call raised this error:\s*\n\s*File "(.+?)", line (\d+)')

DATA_DEPENDENT_LEAD = ("data-dependent: this line needs the value of a tensor, which torch.export does not "
                       "know while tracing (branch with torch.cond or compute both sides with torch.where; "
                       "state known facts with torch._check(...))")

STRATEGIES = (
    ("non-strict", _capture_strategies.TorchExportNonStrictStrategy),
    ("strict", _capture_strategies.TorchExportStrictStrategy),
)


@dataclass
class Attempt:
    strategy: str  # "non-strict" | "strict" | "draft"
    error: BaseException


@dataclass
class Capture:
    program: Any = None  # torch.export.ExportedProgram
    strategy: str | None = None
    attempts: list[Attempt] = field(default_factory=list)


def capture(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any,
            log: Callable[[str], None]) -> Capture:
    result = Capture()
    for name, strategy_class in STRATEGIES:
        outcome = strategy_class(verbose=False)(model, args, kwargs, dynamic_shapes=dynamic_shapes)
        if outcome.success:
            result.program, result.strategy = outcome.exported_program, name
            if result.attempts:
                log(f"captured with torch.export {name} after: " + "; ".join(
                    f"{a.strategy}: {_headline(a.error)}" for a in result.attempts))
            return result
        result.attempts.append(Attempt(name, outcome.exception))
    return result


def is_data_dependent(error: BaseException) -> bool:
    for item in _chain(error):
        if isinstance(item, torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode):
            return True
        if "data-dependent" in (getattr(item, "gb_type", "") or "").lower():
            return True
    return False


def draft_failures(model: Any, args: tuple, kwargs: dict, dynamic_shapes: Any) -> list[tuple[str, str, list[Frame]]]:
    """(failure type, description, frames outermost first) for each problem draft_export saw."""
    from torch._logging.structured import INTERN_TABLE

    program = torch.export.draft_export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes)
    report = getattr(program, "_report", None)
    del program  # never shipped: it bakes in the example's branch
    if report is None:
        return []
    files = {number: name for name, number in INTERN_TABLE.items()}
    problems = []
    for failure in report.failures:
        kind = getattr(failure.failure_type, "name", str(failure.failure_type))
        if kind not in ("DATA_DEPENDENT_ERROR", "MISSING_FAKE_KERNEL", "MISMATCHED_FAKE_KERNEL"):
            continue
        data = failure.data or {}
        frames = [Frame(file=files.get(item.get("filename"), str(item.get("filename"))),
                        line=int(item.get("line") or 0), func=item.get("name", ""))
                  for item in data.get("user_stack") or [] if item.get("line")]
        if kind == "DATA_DEPENDENT_ERROR":
            description = (f"data-dependent expression `{data.get('expr')}` (the example input gives "
                           f"{data.get('result')}): torch.export cannot decide it for every input")
        else:
            description = f"{kind.lower().replace('_', ' ')}: {data.get('op', '')}".rstrip(": ")
        problems.append((kind, description, frames))
    return problems


def findings_for_failure(capture_result: Capture, workspace: Workspace, fallback: Location | None,
                         draft: list[tuple[str, str, list[Frame]]]) -> list[Finding]:
    """One finding per distinct user line among all strategies' errors and draft_export's report.

    An error without any user line (shown at the model's definition) is only its own finding
    when no other strategy located the problem; otherwise it becomes a note of the located one.
    """
    findings: dict[tuple, Finding] = {}
    unlocated: list[tuple[Attempt, Finding]] = []
    for attempt in capture_result.attempts:
        finding, located = _finding_for_error(attempt, workspace, fallback)
        if not located:
            unlocated.append((attempt, finding))
            continue
        key = _key(finding)
        if key in findings:
            findings[key].message += f"\n(torch.export {attempt.strategy} mode fails here too: {_headline(attempt.error)})"
        else:
            findings[key] = finding
    for attempt, finding in unlocated:
        if findings:
            first = next(iter(findings.values()))
            first.message += f"\n(torch.export {attempt.strategy} mode also failed: {_headline(attempt.error)})"
        else:
            findings.setdefault(_key(finding), finding)
    for kind, description, frames in draft:
        location, related, text = locate(frames, workspace)
        if location is None:
            continue
        finding = Finding(code="torch-export", stage="capture", location=location, related=related,
                          source_line=text, docs_url=EXPORTDB_URL,
                          message=f"torch.export (draft_export): {description}")
        key = _key(finding)
        if key not in findings:
            findings[key] = finding
    return list(findings.values())


def _key(finding: Finding) -> tuple:
    location = finding.location
    return (location.file, location.line) if location else ("", 0)


def _finding_for_error(attempt: Attempt, workspace: Workspace, fallback: Location | None) -> tuple[Finding, bool]:
    """The finding for one strategy's error, and whether it found a user line."""
    error = attempt.error
    frames = _user_frames(error, workspace)
    location, related, text = locate(frames, workspace) if frames else (None, [], None)
    located = location is not None
    message = f"torch.export ({attempt.strategy}) failed: {_summary(error)}"
    if is_data_dependent(error):
        message = f"{DATA_DEPENDENT_LEAD}\n{message}"
    docs_url = EXPORTDB_URL
    for item in _chain(error):
        match = _GB_URL_RE.search(str(item))
        if match:
            docs_url = match.group(0)
            break
    if location is None and fallback is not None:
        location = Location(**fallback.to_dict())
        text = source_line(location.file, location.line)
        message += "\n(no line of your code is on the failing call chain: shown at the model's definition)"
    fixes = _check_fixes(error, location, text)
    finding = Finding(code="torch-export", stage="capture", location=location, related=related,
                      source_line=text, docs_url=docs_url, fixes=fixes, message=message)
    return finding, located


def _user_frames(error: BaseException, workspace: Workspace) -> list[Frame]:
    """The call chain of the failure, outermost first, from the best source available."""
    import traceback

    for item in _chain(error):
        # dynamo knows the user's stack when tracing (strict mode).
        real_stack = getattr(item, "real_stack", None)
        if real_stack:
            frames = frames_from_summary(real_stack)
            if any(workspace.contains(f.file) for f in frames):
                return frames
        summary = getattr(item, "innermost_user_frame_summary", None)
        if summary is not None and workspace.contains(getattr(summary, "filename", None)):
            return frames_from_summary([summary])
    for item in _chain(error):
        # non-strict mode runs the user's Python: the traceback has the user's frames.
        frames = frames_from_summary(traceback.extract_tb(item.__traceback__))
        if any(workspace.contains(f.file) for f in frames):
            return frames
    for item in _chain(error):
        match = _BLAME_RE.search(str(item))
        if match:
            return [Frame(match.group(1), int(match.group(2)))]
    # No user frame at all: third-party library frames (a transformers model) still help.
    for item in _chain(error):
        frames = frames_from_summary(traceback.extract_tb(item.__traceback__))
        if any(not is_library_file(f.file) for f in frames):
            return frames
    return []


def _check_fixes(error: BaseException, location: Location | None, text: str | None) -> list[Fix]:
    """The torch._check(...) insertions the exporter suggests, as edits before the line."""
    if location is None:
        return []
    indent = (text or "")[: len(text or "") - len((text or "").lstrip())]
    fixes, seen = [], set()
    for item in _chain(error):
        for check in _CHECK_FIX_RE.findall(str(item)):
            if check in seen:
                continue
            seen.add(check)
            fixes.append(Fix(title=f"Insert {check}", file=location.file, line=location.line, column=1,
                             end_line=location.line, end_column=1, new_text=f"{indent}{check}\n"))
    return fixes


def _chain(error: BaseException):
    seen = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        yield item
        item = item.__cause__ or item.__context__


def _headline(error: BaseException) -> str:
    return f"{type(error).__name__}: {_first_line(str(error))}"


def _first_line(text: str) -> str:
    for line in text.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def _summary(error: BaseException) -> str:
    """The explanation a user needs, without torch's debugging boilerplate."""
    gb_type = getattr(error, "gb_type", None)
    text = str(error)
    if gb_type:
        parts = [gb_type]
        for label in ("Explanation:", "Hint:"):
            for line in text.splitlines():
                if line.strip().startswith(label):
                    parts.append(line.strip())
                    if label == "Hint:" and len(parts) >= 4:
                        break
        return "\n".join(parts)
    lines = []
    for line in text.strip().splitlines():
        stripped = line.strip()
        if stripped.startswith(("For more information", "For extended logs", "If you suspect",
                                "For more debugging help", "For C++ stack trace", "Caused by:",
                                "The following call raised this error", "The error above occurred")):
            break
        if stripped:
            lines.append(stripped)
        if len(lines) >= 4:
            break
    checks = _CHECK_FIX_RE.findall(text)
    if checks:
        lines.append("To fix it, insert one of these checks before this line: " + " or ".join(checks))
    return f"{type(error).__name__}: " + "\n".join(lines)

