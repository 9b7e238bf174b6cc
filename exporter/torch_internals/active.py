"""The adapter of torch's internals this process uses: `internals`, chosen once, at import.

The pipeline imports it as `from onnxlens.exporter.torch_internals.active import internals`
and calls `internals.<name>`; which module that is, torch_internals/__init__.py decides from the
torch version (`adapter_in`). An adapter that cannot load on this torch (a patch release that
moved a piece it imports) is no crash either: the process takes the public path, and
`FALLBACK_REASON` says why (the `torch-version` note repeats it).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from onnxlens.exporter.torch_internals import PUBLIC, adapter_in
from onnxlens.exporter.versions import installed_version


def _load() -> tuple[ModuleType, str | None]:
    name = adapter_in(installed_version("torch"))
    if name != PUBLIC:
        try:
            return importlib.import_module(f"onnxlens.exporter.torch_internals.{name}"), None
        except (ImportError, AttributeError) as error:
            reason = f"the adapter {name} could not load: {type(error).__name__}: {error}"
            return importlib.import_module("onnxlens.exporter.torch_internals.public"), reason
    return importlib.import_module("onnxlens.exporter.torch_internals.public"), None


internals, FALLBACK_REASON = _load()
