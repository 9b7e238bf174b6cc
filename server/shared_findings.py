"""Findings several targets share: one problem, shown once, naming the targets.

The targets of a repository import the same modules. A broken import in a package's
`__init__` stops every target whose module is in that package (vit-pytorch: 24 targets, all
`No module named 'torchvision'` on one line of `dino.py`, which `vit_pytorch/__init__.py`
imports); a helper with an op that has no translation fails every model that calls it. Each
target's result reports it — the target failed because of it — but an editor's line, a CI log
or a code-scanning alert shows it once, saying which targets it stops.

Two findings are the same problem when everything an editor shows of them is the same: code,
severity, location (file, line and columns) and message; their related locations are joined,
in order. The LSP store (server/lsp/diagnostics.py) and the text and SARIF output
(server/check/formats.py) group by this key; the JSON output keeps each target's own list.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable
from typing import TypeVar

from onnxlens.exporter.types import Finding, Related

T = TypeVar("T")

# How many target names a merged message lists before "and N more".
_NAMED = 6


def problem_key(finding: Finding) -> Hashable:
    """What makes two findings the same problem (see the module docstring)."""
    location = finding.location
    where = (location.file, location.line, location.column, location.end_line, location.end_column) if location else None
    return finding.code, finding.severity, where, finding.message


def grouped(items: Iterable[tuple[Hashable, T]]) -> list[list[T]]:
    """Items with equal keys together, in the order each key first came."""
    groups: dict[Hashable, list[T]] = {}
    for key, item in items:
        groups.setdefault(key, []).append(item)
    return list(groups.values())


def with_targets(message: str, targets: list[str]) -> str:
    """The message of a problem several targets share, naming them (one target: as it is)."""
    names = list(dict.fromkeys(targets))
    if len(names) < 2:
        return message
    shown = ", ".join(names[:_NAMED]) + (f" and {len(names) - _NAMED} more" if len(names) > _NAMED else "")
    return f"{message}\n(the same in {len(names)} targets: {shown})"


def joined_related(findings: Iterable[Finding]) -> list[Related]:
    """Every finding's related locations, each once, in order."""
    seen: dict[tuple, Related] = {}
    for finding in findings:
        for related in finding.related:
            seen.setdefault((related.file, related.line, related.column, related.message), related)
    return list(seen.values())


def merged(targets: list[str], findings: list[Finding]) -> Finding:
    """One finding for a problem `findings` (of `targets`, in the same order) share."""
    first = findings[0]
    if len(findings) == 1:
        return first
    return dataclasses.replace(first, message=with_targets(first.message, targets), related=joined_related(findings))
