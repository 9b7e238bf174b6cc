"""`FILE.py:CALLABLE` and `package.module:CALLABLE` references: the one place that reads them.

The config names the model, the inputs, the dynamic-shapes factory and the custom translations
with such references (relative to the workspace root). The server needs the files they point
into (closure before any export, cache keys, the model's definition for code lens) and the
worker needs to import them; both read them here. Torch-free and pygls-free: both sides import
this module.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from onnxlens.exporter.types import Location, TargetSpec

# A dotted Python module path (`models.mlp`), for references that are not file paths.
MODULE_PATH = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Reference:
    """A parsed reference: `where` is `FILE.py` or `package.module`, `attribute` may be dotted."""

    where: str
    attribute: str

    @property
    def is_file(self) -> bool:
        return self.where.endswith(".py")

    @property
    def name(self) -> str:
        """The callable's own name (the last part of a dotted attribute)."""
        return self.attribute.split(".")[-1]

    def candidate_files(self, root: str | Path) -> list[Path]:
        """Where the referenced module's source may be, most likely first (not checked)."""
        if self.is_file:
            return [Path(root) / self.where]
        base = Path(root, *self.where.split("."))
        return [base.with_suffix(".py"), base / "__init__.py"]

    def outside(self, root: str | Path) -> Path | None:
        """The referenced file, resolved, when it lies outside the workspace root (symlinks and
        `..` followed); None when it is inside, or the reference names a module."""
        if not self.is_file:
            return None
        real_root = Path(root).resolve()
        resolved = (real_root / self.where).resolve()
        return None if resolved.is_relative_to(real_root) else resolved

    def outside_message(self, what: str, root: str | Path) -> str:
        """What to say about a file reference outside the workspace (`outside` is not None)."""
        return (f"{what}: {self.where} is outside the workspace {Path(root).resolve()} (it resolves to "
                f"{self.outside(root)}): onnxlens imports only the workspace's own files by path; move it "
                "into the workspace, or install it as a package and name it `package.module:CALLABLE`")

    def source_file(self, root: str | Path) -> Path | None:
        """The existing source file of the referenced module, symlinks resolved; None if absent."""
        for candidate in self.candidate_files(root):
            if candidate.is_file():
                return candidate.resolve()
        return None


def parse(reference: str | None) -> Reference | None:
    """The parts of a reference; None for anything that is not `WHERE:ATTRIBUTE`."""
    if not reference or ":" not in reference:
        return None
    where, _, attribute = reference.rpartition(":")
    if not where or not attribute:
        return None
    return Reference(where, attribute)


def source_file(root: str | Path, reference: str | None) -> str | None:
    """The file a reference points into, if it exists (absolute, symlinks resolved)."""
    parsed = parse(reference)
    found = parsed.source_file(root) if parsed else None
    return str(found) if found else None


_DEFINITION = r"^\s*(?:async\s+)?(?:def|class)\s+{name}\b"


def definition_location(root: str | Path, reference: str | None) -> Location | None:
    """Where the referenced callable is defined, found by reading its file (no import).

    The `def`/`class` line when it is found; line 1 of the file when the file exists but the
    name is not defined at its top level (an assignment, an import); None without a file.
    """
    parsed = parse(reference)
    path = parsed.source_file(root) if parsed else None
    if path is None:
        return None
    pattern = re.compile(_DEFINITION.format(name=re.escape(parsed.name)))
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, start=1):
                if pattern.match(text):
                    return Location(file=str(path), line=number, column=len(text) - len(text.lstrip()) + 1)
    except OSError:
        return None
    return Location(file=str(path), line=1)


def model_definition(spec: TargetSpec) -> Location | None:
    """Where the target's model callable is defined (line only: a finding placed there marks
    the whole line)."""
    location = definition_location(spec.root, spec.model)
    return Location(file=location.file, line=location.line) if location else None
