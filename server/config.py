"""Workspace configuration: [tool.onnxlens] in pyproject.toml, or onnxlens.toml (same keys, top level).

BOOTSTRAP VERSION: parses the happy path. The config helper adds full validation (each mistake a
`config` finding on the offending line) keeping this interface.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from onnxlens.exporter.types import Finding, TargetSpec

CONFIG_NAMES = ("onnxlens.toml", "pyproject.toml")


@dataclass
class Workspace:
    config_file: Path  # the file the configuration came from
    root: Path  # its directory: references and output-dir are relative to it
    output_dir: Path
    targets: list[TargetSpec] = field(default_factory=list)
    target_lines: dict[str, int] = field(default_factory=dict)  # name -> 1-based line in config_file
    findings: list[Finding] = field(default_factory=list)  # `config` findings


def find_config(start: Path) -> Path | None:
    """The config file for `start` (a file or directory), searching upward; None if there is none.

    A pyproject.toml counts only if it has a [tool.onnxlens] table.
    """
    start = start.resolve()
    if start.is_file():
        return start
    for directory in (start, *start.parents):
        for name in CONFIG_NAMES:
            candidate = directory / name
            if candidate.is_file() and _has_onnxlens_table(candidate):
                return candidate
    return None


def _has_onnxlens_table(path: Path) -> bool:
    if path.name != "pyproject.toml":
        return True
    try:
        return "onnxlens" in tomllib.loads(path.read_text()).get("tool", {})
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError):
        return "[tool.onnxlens" in path.read_text(errors="replace")


def load_workspace(config_file: Path) -> Workspace:
    """Read and validate a config file. Never raises for bad content: mistakes become findings."""
    config_file = config_file.resolve()
    data = tomllib.loads(config_file.read_text())
    table = data.get("tool", {}).get("onnxlens", {}) if config_file.name == "pyproject.toml" else data
    root = config_file.parent
    output_dir = (root / table.get("output-dir", ".onnxlens")).resolve()
    workspace = Workspace(config_file=config_file, root=root, output_dir=output_dir)
    for entry in table.get("target", []):
        name = entry.get("name") or entry["model"].rpartition(":")[2].lower()
        workspace.targets.append(TargetSpec(
            name=name,
            root=str(root),
            model=entry["model"],
            inputs=entry["inputs"],
            dynamic_shapes=entry.get("dynamic-shapes"),
            custom_translations=entry.get("custom-translations"),
            output=str((root / entry["output"]).resolve()) if "output" in entry else str(output_dir / f"{name}.onnx"),
            report=str(output_dir / "reports" / f"{name}.md"),
            verify=entry.get("verify", table.get("verify", True)),
            timeout=float(entry.get("timeout", table.get("timeout", 120))),
            opset=entry.get("opset", table.get("opset")),
            input_names=entry.get("input-names"),
            output_names=entry.get("output-names"),
        ))
    return workspace
