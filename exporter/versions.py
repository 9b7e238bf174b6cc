"""The versions that decide whether a cached result is still valid, read without importing torch.

The cache key of a result includes them (server/service/cache.py), the worker reports them when it is
ready, and `onnxlens --version` and the server's log at start show them (`version_line`), with
the adapter of torch's internals the worker's torch selects. Read from package metadata:
importing torch to ask would cost the server a second.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from onnxlens.exporter.launch import WORKING_DIRECTORY, interpreter_environment

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


def interpreter_versions(python: str) -> dict[str, str | None]:
    """installed_versions() of the interpreter `python` (the worker's: this one, or the user's
    that the editor named); {"unknown-interpreter": python} if it cannot say."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return installed_versions()
    try:
        out = subprocess.run([python, "-c", VERSIONS_SCRIPT], capture_output=True, text=True, timeout=60,
                             check=True, cwd=WORKING_DIRECTORY, env=interpreter_environment()).stdout
        return json.loads(out)
    except (OSError, subprocess.SubprocessError, ValueError):
        return {"unknown-interpreter": python}


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


def version_lines(versions: dict[str, str | None], python: str, environ: Mapping[str, str] | None = None) -> list[str]:
    """What `onnxlens --version` prints (one item a line) and the server logs at start (joined
    with "; "): onnxlens, the ONNX stack of the worker's interpreter `python` (`versions`: its
    installed_versions()), that interpreter, and the adapter of torch's internals its torch
    selects in the environment `environ` (torch_internals/__init__.py)."""
    from onnxlens.exporter.torch_internals import VERSION_VARIABLE, adapter_in, describe, seen_torch_version

    if "unknown-interpreter" in versions:
        return [f"onnxlens {installed_version('onnxlens') or 'unknown'}",
                f"worker python {python}: could not read its package versions"]
    stack = ", ".join(f"{name} {versions.get(name) or 'not installed'}"
                      for name in ("torch", "onnx", "onnxscript", "onnxruntime"))
    python_version = (versions.get("python") or "").split(" ")[0] or "unknown"
    torch_version = versions.get("torch")
    adapter = describe(adapter_in(torch_version, environ)) if torch_version else "none (torch is not installed)"
    seen = seen_torch_version(torch_version, environ)
    if torch_version and seen != torch_version:
        adapter += f", as for torch {seen} ({VERSION_VARIABLE})"
    return [f"onnxlens {installed_version('onnxlens') or 'unknown'}", stack,
            f"worker python {python} (Python {python_version})", f"torch adapter {adapter}"]
