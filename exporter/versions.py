"""The versions that decide whether a cached result is still valid, read without importing torch.

The cache key of a result includes them (server/cache.py), and the worker reports them when it
is ready. Read from package metadata: importing torch to ask would cost the server a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import sys
from pathlib import Path

VERSIONED_PACKAGES = ("torch", "onnx", "onnxscript", "onnxruntime", "onnxlens")


def installed_version(package: str) -> str | None:
    """The installed version of one package in this interpreter (None when absent)."""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def installed_versions() -> dict[str, str | None]:
    """Package -> installed version (None when absent) for this interpreter, plus "python"."""
    versions: dict[str, str | None] = {name: installed_version(name) for name in VERSIONED_PACKAGES}
    versions["python"] = sys.version
    return versions


# Run by another interpreter (the user's, which may differ from the server's, and may lack
# onnxlens): prints the same mapping as JSON.
VERSIONS_SCRIPT = f"""
import importlib.metadata as metadata, json, sys
versions = {{}}
for name in {VERSIONED_PACKAGES!r}:
    try:
        versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
        versions[name] = None
versions["python"] = sys.version
print(json.dumps(versions))
"""


def exporter_source_digest() -> str:
    """sha256 over every Python file of onnxlens.exporter, packages included.

    Part of the cache key: an edited exporter (a development checkout) must not answer with
    results an older exporter produced, whatever package the edited module lives in.
    """
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()

