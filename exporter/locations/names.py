"""How places and modules are named in messages: short paths, the library function that called
an op, module lists.

A message is read next to the code, so it names things the way the user would look for them:
a library file by its path inside the installed package (`kornia/core/utils.py:484`, not the
virtual environment's absolute path), the innermost library function on the chain (the one
that actually called the op), and a list of modules as ranges in numeric order
(`layers.0–31.attn`, not 32 names in string order where `layers.10` comes before `layers.2`).

Torch-free: plain text.
"""

from __future__ import annotations

import os
import re

from onnxlens.exporter.locations.files import Origin, Workspace, classify
from onnxlens.exporter.locations.frames import Frame

_INSTALLED = re.compile(r"[/\\](?:site|dist)-packages[/\\]")


def short_path(file: str, workspace: Workspace | None = None) -> str:
    """A file as a user finds it: inside its installed package, else inside the workspace."""
    parts = _INSTALLED.split(file, maxsplit=1)
    if len(parts) == 2:
        return parts[1].replace("\\", "/")
    if workspace is not None and workspace.contains(file):
        return os.path.relpath(os.path.realpath(file), workspace.root).replace("\\", "/")
    return file


def calling_library_frame(frames: list[Frame], workspace: Workspace | None) -> Frame | None:
    """The frame that called the op when that is library code (the innermost frame that is not
    torch's own, when it is not the user's); None when the user's own line called it."""
    for frame in reversed(frames):
        origin = classify(frame.file, workspace)
        if origin is Origin.INTERNAL:
            continue
        return frame if origin is Origin.LIBRARY else None
    return None


def library_function(frame: Frame, workspace: Workspace | None = None) -> str:
    """"in `_torch_svd_cast`, kornia/core/utils.py:484"."""
    return f"in `{frame.func or '?'}`, {short_path(frame.file, workspace)}:{frame.line}"


def module_list(paths: list[str]) -> str:
    """Module paths as ranges in numeric order: `layers.0–31.attn`, `blocks.[0–2, 5].ff`.

    Paths that differ only in one numeric component are merged into a range; merging runs from
    the last component to the first, so `blocks.0.layers.0` … `blocks.1.layers.3` become
    `blocks.0–1.layers.0–3`.
    """
    entries = {tuple(path.split(".")) for path in paths if path is not None}
    if not entries:
        return ""
    width = max(len(entry) for entry in entries)
    for position in range(width - 1, -1, -1):
        entries = _merge_at(entries, position)
    return ", ".join(".".join(entry) for entry in sorted(entries, key=_natural_key))


def _merge_at(entries: set[tuple[str, ...]], position: int) -> set[tuple[str, ...]]:
    groups: dict[tuple, list[int]] = {}
    merged: set[tuple[str, ...]] = set()
    for entry in entries:
        if len(entry) > position and entry[position].isdigit():
            key = entry[:position] + ("",) + entry[position + 1:]
            groups.setdefault(key, []).append(int(entry[position]))
        else:
            merged.add(entry)
    for key, numbers in groups.items():
        merged.add(key[:position] + (_ranges(sorted(set(numbers))),) + key[position + 1:])
    return merged


def _ranges(numbers: list[int]) -> str:
    if len(numbers) == 1:
        return str(numbers[0])
    runs: list[list[int]] = []
    for number in numbers:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    text = ", ".join(f"{run[0]}–{run[-1]}" if len(run) > 1 else str(run[0]) for run in runs)
    return text if len(runs) == 1 else f"[{text}]"


def _natural_key(entry: tuple[str, ...]) -> list:
    """Numbers (and ranges, by their first number) in numeric order, names in text order."""
    key = []
    for part in entry:
        number = re.match(r"\[?(\d+)", part)
        key.append((0, int(number.group(1)), part) if number else (1, 0, part))
    return key
