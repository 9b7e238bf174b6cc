"""The adapter of torch's internals this process uses: `internals`, chosen once, at import.

The pipeline imports it as `from onnxlens.exporter.torch_internals.active import internals`
and calls `internals.<name>`; which module that is, torch_internals/__init__.py decides from the
torch version (`adapter_in`). An adapter that cannot load on this torch, or whose private pieces
(`PIECES`) are not all there (a patch release that moved one), is no crash either: the process
takes the public path, and `FALLBACK_REASON` says why (the `torch-version` note repeats it).
Checking the pieces costs ~the imports the first export makes anyway.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from onnxlens.exporter.torch_internals import PUBLIC, adapter_in
from onnxlens.exporter.versions import installed_version


def missing_pieces(pieces: tuple[str, ...]) -> list[str]:
    """The dotted names (`torch.onnx._internal.exporter._core._is_onnx_op`) that do not resolve:
    the longest importable module, then attributes."""
    missing = []
    for piece in pieces:
        parts = piece.split(".")
        for split in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ImportError:
                continue
            for attribute in parts[split:]:
                found = getattr(found, attribute, _MISSING)
            if found is _MISSING:
                missing.append(piece)
            break
        else:
            missing.append(piece)
    return missing


_MISSING = object()


def _load() -> tuple[ModuleType, str | None]:
    name = adapter_in(installed_version("torch"))
    public = "onnxlens.exporter.torch_internals.public"
    if name == PUBLIC:
        return importlib.import_module(public), None
    try:
        adapter = importlib.import_module(f"onnxlens.exporter.torch_internals.{name}")
    except (ImportError, AttributeError) as error:
        return importlib.import_module(public), f"the adapter {name} could not load: {type(error).__name__}: {error}"
    missing = missing_pieces(adapter.PIECES)
    if missing:
        return importlib.import_module(public), f"the adapter {name} misses {', '.join(missing)} on this torch"
    return adapter, None


internals, FALLBACK_REASON = _load()
