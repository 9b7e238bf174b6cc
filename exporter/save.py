"""Atomic writes: a reader sees the old file or the new one, never half of one.

The .onnx is saved exactly as `torch.onnx.export(..., f=path, dynamo=True)` saves it (weights in
`<name>.onnx.data` next to it), so the files are byte-identical to the public API's. The
external data file's name is written into the model, so the model is saved under its final
name in a private temporary directory next to the destination, then each file is renamed into
place (the data file first: the new .onnx never points at old weights). A failed export touches
nothing, so the last good .onnx survives.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from typing import Any


def save_onnx(onnx_program: Any, destination: str) -> list[str]:
    """Save like the public API (external data) atomically; returns the files written."""
    directory = os.path.dirname(os.path.abspath(destination)) or "."
    os.makedirs(directory, exist_ok=True)
    name = os.path.basename(destination)
    staging = tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        onnx_program.save(os.path.join(staging, name), include_initializers=True,
                          keep_initializers_as_inputs=False, external_data=True)
        written = sorted(os.listdir(staging), key=lambda f: f == name)  # the .onnx last
        for file in written:
            os.replace(os.path.join(staging, file), os.path.join(directory, file))
        if f"{name}.data" not in written:
            # A model without weights has no data file: drop a stale one from an older export.
            stale = os.path.join(directory, f"{name}.data")
            if os.path.exists(stale):
                os.remove(stale)
        _remove_stale_staging(directory, name, keep=staging)
        return [os.path.join(directory, file) for file in written]
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _remove_stale_staging(directory: str, name: str, keep: str) -> None:
    """Remove what killed jobs left behind: a job cancelled by a newer save (SIGKILL) in the
    middle of its save never reaches its `finally`, and its half-written staging directory or
    temp file would stay in the output dir for good. One job per target runs at a time, so any
    other `.<name>.*.tmp` is a leftover."""
    prefix = f".{name}."
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return
    for entry in entries:
        if entry.name.startswith(prefix) and entry.name.endswith(".tmp") and entry.path != keep:
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(entry.path)


def write_text(destination: str, text: str) -> str:
    """Write a text file atomically (temp file in the same directory + rename)."""
    directory = os.path.dirname(os.path.abspath(destination)) or "."
    os.makedirs(directory, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(destination)}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(temporary, 0o644)  # mkstemp's 0600 would hide the file from the user's tools
        os.replace(temporary, destination)
        _remove_stale_staging(directory, os.path.basename(destination), keep=temporary)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return destination
