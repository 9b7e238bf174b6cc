"""What an editor shows about one target's export: the `onnxlens/exportStatus` notification."""

from __future__ import annotations

from dataclasses import dataclass

from onnxlens.exporter.graph_change import GraphChange
from onnxlens.exporter.types import ExportResult
from onnxlens.exporter.wire.plain import Plain


@dataclass(frozen=True)
class ExportStatus(Plain):
    """What an editor shows about one target's export (the `onnxlens/exportStatus` notification:
    the VS Code status bar reads these fields instead of parsing the progress text)."""

    target: str
    state: str  # "exporting" | "ok" | "failed" | "cancelled"
    stage: str | None = None  # while exporting: the running stage
    seconds: float | None = None  # when finished: the export's duration
    node_count: int | None = None
    problems: int = 0  # error findings
    warnings: int = 0  # warning findings (a `mismatch`, say)
    cached: bool = False
    verified: bool | None = None  # None: not verified
    verifying: bool = False  # the export is saved and shown; its verification still runs
    summary: str = ""  # the one-line text shown at the end of the progress and in the log
    # The graph's change since the target's previous export that had one ("+3 nodes (Mul, Add,
    # Sqrt), +0 B", "graph unchanged"); None: nothing to compare with.
    change: str | None = None

    @classmethod
    def of_result(cls, result: ExportResult, change: GraphChange | None = None, *,
                  verifying: bool = False) -> ExportStatus:
        """The finished state of an export (ok, or failed with its problem count), and what its
        graph changed (`change`: against the previous export, when there is one); `verifying`:
        a saved export shown before its verification ends (a second status follows)."""
        errors = sum(1 for f in result.findings if f.severity == "error")
        warnings = sum(1 for f in result.findings if f.severity == "warning")
        verified = result.verification.passed if result.verification is not None else None
        if result.status == "ok":
            nodes = f", {result.node_count} nodes" if result.node_count is not None else ""
            summary = f"{result.target}: exported in {result.seconds:.2f} s{nodes}" + (
                " (cached)" if result.cached else "")
        else:
            problems = sum(1 for f in result.findings if f.severity != "info")  # a note is no problem
            summary = f"{result.target}: {problems} problem{'s' if problems != 1 else ''}{result.elsewhere()}"
        described = change.describe() if change is not None else None
        if change is not None and not change.unchanged:
            summary += f"; {described}"
        if verifying:
            summary += "; verifying"
        return cls(target=result.target, state=result.status, seconds=result.seconds,
                   node_count=result.node_count, problems=errors, warnings=warnings,
                   cached=result.cached, verified=verified, verifying=verifying, summary=summary,
                   change=described)
