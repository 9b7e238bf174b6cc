"""Problems found past the first failure torch stops at: each its own finding, marked as such.

torch.export stops at the first problem. Some later ones can still be seen without changing
torch's answer, by running something else after the failed capture: draft_export carries on past
data-dependent values and ops without a fake kernel (draft_problems.py); dynamo's check of higher-order
op bodies, let through once it refused one, reaches the bodies the first refusal hid, and torch's
next check of a body's outputs can be run on them as the op would read them once the first
problem is fixed (hop_bodies.py). Each such problem says how it was found.

A problem is new when the innermost line of its chain outside torch is no line of the findings
so far (two data-dependent lines of one library function share the user's call; the first body
refusal found again is the capture's own finding).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from onnxlens.exporter.locations import Frame, Origin, Workspace, classify, locate
from onnxlens.exporter.types import Finding, Location, Related

@dataclass
class FurtherProblem:
    """A problem behind the first failure."""

    description: str  # what the problem is
    found_by: str  # how it was seen: "by torch.export.draft_export", ...
    frames: list[Frame]  # its chain, outermost first
    related: list[Related] = field(default_factory=list)  # places that explain it, after the chain's


def further_findings(problems: list[FurtherProblem], found: list[Finding], workspace: Workspace,
                     fallback: Location | None, docs_url: str) -> list[Finding]:
    """The capture findings for the problems that are new to `found` (and to each other)."""
    covered = {place for finding in found for place in _lines(finding)}
    findings = []
    for problem in problems:
        visible = [frame for frame in problem.frames if classify(frame.file, workspace) is not Origin.INTERNAL]
        innermost = (os.path.realpath(visible[-1].file), visible[-1].line) if visible else None
        if innermost is None or innermost in covered:
            continue
        covered.add(innermost)
        place = locate(problem.frames, workspace)
        message = f"found past the first failure {problem.found_by}: {problem.description}"
        if place.at_fallback(fallback):
            message += "\n(no line of your code is on the failing call chain: shown at the model's definition)"
        if place.location is not None:
            findings.append(Finding(code="torch-export", stage="capture", location=place.location,
                                    related=place.related + problem.related, source_line=place.source_line,
                                    docs_url=docs_url, message=message))
    return findings


def _lines(finding: Finding) -> set[tuple[str, int]]:
    """The lines a finding names: its primary location and its related ones."""
    lines = {(os.path.realpath(related.file), related.line) for related in finding.related}
    if finding.location is not None:
        lines.add((os.path.realpath(finding.location.file), finding.location.line))
    return lines
