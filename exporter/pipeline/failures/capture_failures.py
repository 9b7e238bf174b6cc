"""Capture's failures as findings: one per distinct line of the user's code among every
strategy's errors (tracing/strategies.py), then one per problem found past them (past_first.py).

Each finding says what torch said, without its debugging boilerplate; a data-dependent failure
leads with what that means and how to fix it, and torch's suggested `torch._check(...)`
insertions become the finding's suggested edits. A higher-order op's body dynamo rejects as a
whole, or whose outputs torch's code for the op cannot read, is placed in the body, and what torch
would refuse next in that body is a finding past it (hop_bodies.py); a symbolic value a torch
function refuses has the line that made it related (symbolic_arguments.py).
"""

from __future__ import annotations

import os
import re

from onnxlens.exporter.locations import Frame, Workspace, locate
from onnxlens.exporter.pipeline.failures.call_chains import innermost_outside_torch, user_frames
from onnxlens.exporter.pipeline.failures.errors import exception_chain, headline
from onnxlens.exporter.pipeline.failures.hop_bodies import body_failure
from onnxlens.exporter.pipeline.failures.past_first import FurtherProblem, further_findings
from onnxlens.exporter.pipeline.failures.symbolic_arguments import SymbolicArgument, symbolic_argument
from onnxlens.exporter.pipeline.tracing.strategies import Attempt, Capture
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding, Location, Related, SuggestedEdit

EXPORTDB_URL = "https://pytorch.org/docs/main/generated/exportdb/index.html"
_GB_URL_RE = re.compile(r"https://\S+/gb/gb\d+\.html")
_CHECK_FIX_RE = re.compile(r"^\s*\d+\.\s*(torch\._check\(.*\))\s*$", re.MULTILINE)

DATA_DEPENDENT_LEAD = ("data-dependent: this line needs the value of a tensor, which torch.export does not "
                       "know while tracing (branch with torch.cond or compute both sides with torch.where; "
                       "state known facts with torch._check(...))")


def is_data_dependent(error: BaseException) -> bool:
    for item in exception_chain(error):
        if internals.is_data_dependent_guard(item):
            return True
        if "data-dependent" in (getattr(item, "gb_type", "") or "").lower():
            return True
    return False


def misses_fake_kernel(error: BaseException) -> bool:
    return any(internals.is_missing_fake_kernel(item) for item in exception_chain(error))


def findings_for_failure(capture_result: Capture, workspace: Workspace, fallback: Location | None,
                         further: list[FurtherProblem]) -> list[Finding]:
    """One finding per distinct user line among all strategies' errors, then one per problem
    found past them (past_first.py): `further`, and what torch would refuse next in a body an
    error is about (hop_bodies.py).

    An error without any user line (shown at the model's definition) is only its own finding
    when no other strategy located the problem; otherwise it becomes a note of the located one.
    """
    findings: dict[tuple, Finding] = {}
    unlocated: list[tuple[Attempt, Finding]] = []
    behind: list[FurtherProblem] = []
    for attempt in capture_result.attempts:
        finding, located, next_problems = _finding_for_error(attempt, workspace, fallback)
        behind.extend(next_problems)
        if not located:
            unlocated.append((attempt, finding))
            continue
        key = _key(finding)
        if key in findings:
            findings[key].message += f"\n(torch.export {attempt.strategy} mode fails here too: {headline(attempt.error)})"
        else:
            findings[key] = finding
    for attempt, finding in unlocated:
        if findings:
            first = next(iter(findings.values()))
            first.message += f"\n(torch.export {attempt.strategy} mode also failed: {headline(attempt.error)})"
        else:
            findings.setdefault(_key(finding), finding)
    found = list(findings.values())
    return found + further_findings(behind + further, found, workspace, fallback, EXPORTDB_URL)


def _key(finding: Finding) -> tuple:
    location = finding.location
    return (location.file, location.line) if location else ("", 0)


def _finding_for_error(attempt: Attempt, workspace: Workspace,
                       fallback: Location | None) -> tuple[Finding, bool, list[FurtherProblem]]:
    """The finding for one strategy's error, whether it found a user line, and the problems
    torch would refuse next in the body the error is about (hop_bodies.py)."""
    error = attempt.error
    frames = user_frames(error, workspace)
    body = body_failure(error, frames, workspace)
    place = locate(body.frames if body else frames, workspace)
    located = place.location is not None
    message = f"torch.export ({attempt.strategy}) failed: {_summary(error)}"
    if body is not None:
        message += f"\n({body.note})"
        place.related.extend(body.related)
    made = _symbolic_argument_made(error, frames, workspace)
    if made is not None:
        place.related.insert(0, Related(file=os.path.realpath(made.made.file), line=made.made.line, message=(
            f"`{made.variable}` is assigned here: on a dynamic size this makes a {made.kind}, and the call "
            f"needs a plain value for `{made.argument}`")))
        message += (f"\n(`{made.variable}`, passed as `{made.argument}`, is a {made.kind}: see its assignment in "
                    f"`{made.made.func}`, line {made.made.line})")
    if is_data_dependent(error):
        message = f"{DATA_DEPENDENT_LEAD}\n{message}"
    docs_url = EXPORTDB_URL
    for item in exception_chain(error):
        match = _GB_URL_RE.search(str(item))
        if match:
            docs_url = match.group(0)
            break
    if place.at_fallback(fallback):
        message += "\n(no line of your code is on the failing call chain: shown at the model's definition)"
    fixes = check_fixes(error, place.location, place.source_line)
    finding = Finding(code="torch-export", stage="capture", location=place.location, related=place.related,
                      source_line=place.source_line, docs_url=docs_url, fixes=fixes, message=message)
    return finding, located, body.further if body is not None else []


def _symbolic_argument_made(error: BaseException, frames: list[Frame], workspace: Workspace) -> SymbolicArgument | None:
    """Where the symbolic value a torch function refused was made (symbolic_arguments.py), from
    the innermost frame of the chain outside torch: the call that passed it."""
    call = innermost_outside_torch(frames, workspace)
    if call is None:
        return None
    return symbolic_argument("\n".join(str(item) for item in exception_chain(error)), call)


def check_fixes(error: BaseException, location: Location | None, text: str | None) -> list[SuggestedEdit]:
    """The torch._check(...) insertions the exporter suggests, as edits before the line."""
    if location is None:
        return []
    indent = (text or "")[: len(text or "") - len((text or "").lstrip())]
    fixes, seen = [], set()
    for item in exception_chain(error):
        for check in _CHECK_FIX_RE.findall(str(item)):
            if check in seen:
                continue
            seen.add(check)
            fixes.append(SuggestedEdit(title=f"Insert {check}", file=location.file, line=location.line, column=1,
                             end_line=location.line, end_column=1, new_text=f"{indent}{check}\n"))
    return fixes


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
