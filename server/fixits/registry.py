"""Which quick fixes there are: the table the code-action feature (server/lsp/features/code_actions.py)
reads, so that a new kind of fix is one entry here and one planning module, not a method of the
feature repeating its lookups.

Two places a fix is offered, one table each:

* `ON_FINDINGS`: on a finding, one fix per proposal the finding carries (the worker's halves,
  exporter/proposals/): "Write an ONNX translation for aten.X" per translation stub,
  "Decompose aten.X with torch's decomposition" per decomposition offer.
* `ON_TARGETS`: on a target's definitions (its model, its example inputs' and dynamic shapes'
  functions, its header in the config, the `setup` findings of its capture), one fix from its
  last result: "Declare dynamic shapes" from the result's proposal.

Each entry's `plan` takes the `ConfiguredTarget` (fix.py) and the proposal and returns a `Fix`,
or None when there is no clean place for the edit. The finding's own text edits (exporter
`Fix`: `torch._check` insertions) and "Add <Name> as an ONNX export target" (buffer_targets.py,
planned in the helper process from the buffer, not from a result) are not in these tables.

Torch-free and LSP-free.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.types import ExportResult, Finding
from onnxlens.server.fixits import decomposition, dynamic_shapes, translation
from onnxlens.server.fixits.fix import ConfiguredTarget, Fix


@dataclass(frozen=True)
class FindingFixes:
    """A kind of fix offered on a finding: one per proposal `proposals` reads from it.
    `creates_files`: its edit may create a file, which only a client that creates files from a
    WorkspaceEdit can apply (the kind is then not offered to other clients)."""

    proposals: Callable[[Finding], Sequence[Any]]
    plan: Callable[[ConfiguredTarget, Any], Fix | None]
    creates_files: bool = False


@dataclass(frozen=True)
class TargetFixes:
    """A kind of fix offered on a target's definitions: one from the proposal `proposal` reads
    from its last result (None: nothing to propose)."""

    proposal: Callable[[ExportResult], Any | None]
    plan: Callable[[ConfiguredTarget, Any], Fix | None]


ON_FINDINGS: tuple[FindingFixes, ...] = (
    FindingFixes(lambda finding: finding.translation_stubs, translation.plan, creates_files=True),
    FindingFixes(lambda finding: finding.decomposition_offers, decomposition.plan),
)

ON_TARGETS: tuple[TargetFixes, ...] = (
    TargetFixes(lambda result: result.shapes_proposal, dynamic_shapes.plan),
)


def fixes_on_finding(target: ConfiguredTarget, finding: Finding, *, client_creates_files: bool) -> list[Fix]:
    """The fixes of `finding` (a finding of `target`), in the table's order."""
    return [fix for kind in ON_FINDINGS if client_creates_files or not kind.creates_files
            for proposal in kind.proposals(finding)
            if (fix := kind.plan(target, proposal)) is not None]


def fixes_on_target(target: ConfiguredTarget, result: ExportResult) -> list[Fix]:
    """The fixes `target`'s last result proposes, in the table's order."""
    return [fix for kind in ON_TARGETS
            if (proposal := kind.proposal(result)) is not None
            if (fix := kind.plan(target, proposal)) is not None]
