"""Plain data shared by the export worker and the server.

Everything here is a dataclass of str/int/float/bool/list/dict, so it crosses the msgpack pipe
between the processes as a dict (`to_dict` / `from_dict`). No torch, no pygls: the server
imports this module, and so does the worker.

Conventions (the contract of ../shared/DESIGN.md):
* paths are absolute in the data; the CLI makes them workspace-relative when it prints them;
* lines are 1-based; columns are 1-based and `end_column` is exclusive (as in SARIF), so the
  LSP conversion is `character = column - 1`, `end character = end_column - 1`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Pipeline stages, in order. A finding's `stage` is one of these.
STAGES = ("load", "capture", "decompose", "scan", "translate", "check", "verify", "save")

# Diagnostic code -> default severity (DESIGN.md, "Findings and diagnostic codes").
CODES: dict[str, str] = {
    "config": "error",
    "import": "error",
    "setup": "error",
    "torch-export": "error",
    "unsupported-op": "error",
    "decomposition": "error",
    "translation": "error",
    "onnx-checker": "error",
    "mismatch": "warning",
    "timeout": "error",
    "crash": "error",
}


def _from_dict(cls, data: dict[str, Any]):
    """Build a dataclass from a dict, ignoring keys it does not know (forward compatibility)."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class Location:
    file: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Location:
        return _from_dict(cls, data)


@dataclass
class Related:
    """Another frame of the user-relevant call chain (innermost first), or a note."""

    file: str
    line: int
    message: str
    column: int = 1

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Related:
        return _from_dict(cls, data)


@dataclass
class Fix:
    """A text edit the exporter itself suggests (e.g. insert `torch._check(...)`)."""

    title: str
    file: str
    line: int
    column: int
    end_line: int
    end_column: int
    new_text: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        return _from_dict(cls, data)


@dataclass
class Finding:
    code: str
    message: str
    stage: str
    location: Location | None = None
    related: list[Related] = field(default_factory=list)
    severity: str = ""  # empty: the code's default from CODES
    source_line: str | None = None  # text of the primary line, for reports and the CLI
    docs_url: str | None = None  # becomes the LSP codeDescription
    fixes: list[Fix] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.severity:
            self.severity = CODES.get(self.code, "error")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        finding = _from_dict(cls, data)
        if isinstance(finding.location, dict):
            finding.location = Location.from_dict(finding.location)
        finding.related = [Related.from_dict(r) if isinstance(r, dict) else r for r in finding.related]
        finding.fixes = [Fix.from_dict(f) if isinstance(f, dict) else f for f in finding.fixes]
        return finding


@dataclass
class TargetSpec:
    """One export job's target, fully resolved by the server's config loader.

    `model`, `inputs`, `dynamic_shapes` and `custom_translations` are references
    `FILE.py:CALLABLE` (relative to `root`) or `package.module:CALLABLE` (importable from `root`).
    """

    name: str
    root: str  # workspace root: the directory of the config file
    model: str
    inputs: str
    output: str  # absolute path of the .onnx to write
    report: str  # absolute path of the markdown report to write
    dynamic_shapes: str | None = None
    custom_translations: str | None = None
    verify: bool = True
    timeout: float = 120.0
    opset: int | None = None
    input_names: list[str] | None = None
    output_names: list[str] | None = None
    memory_limit_mb: int | None = None  # child address-space cap; None: no cap

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TargetSpec:
        return _from_dict(cls, data)


@dataclass
class LineInfo:
    """What one source line became in ONNX: for hover and code lens."""

    file: str
    line: int
    ops: dict[str, int] = field(default_factory=dict)  # ONNX op type -> count
    outputs: list[str] = field(default_factory=list)  # e.g. "float32[2, 10]"
    modules: list[str] = field(default_factory=list)  # module paths, e.g. "layers.2.ff.0"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LineInfo:
        return _from_dict(cls, data)


@dataclass
class ExportResult:
    target: str
    status: str  # "ok" | "failed"
    onnx: str | None = None  # path of the .onnx written by this job (None when it failed)
    report: str | None = None
    exported_program: str | None = None  # path of a text dump of the torch.export program
    seconds: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    verification: dict[str, Any] | None = None  # {"max_abs_diff", "max_rel_diff", "passed"}
    findings: list[Finding] = field(default_factory=list)
    closure: list[str] = field(default_factory=list)  # workspace files the target imported
    lines: list[LineInfo] = field(default_factory=list)
    node_count: int | None = None
    model_location: Location | None = None  # where the model callable is defined
    cached: bool = False  # set by the server when the result came from the cache

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExportResult:
        result = _from_dict(cls, data)
        result.findings = [Finding.from_dict(f) if isinstance(f, dict) else f for f in result.findings]
        result.lines = [LineInfo.from_dict(x) if isinstance(x, dict) else x for x in result.lines]
        if isinstance(result.model_location, dict):
            result.model_location = Location.from_dict(result.model_location)
        return result
