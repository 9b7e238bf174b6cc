"""Invariants of the layout (ARCHITECTURE.md): the server never imports torch, the worker never
imports pygls. Checked by importing in a fresh interpreter, so transitive imports count too."""

import pkgutil
import subprocess
import sys

import pytest

import onnxlens.server


def _server_modules() -> list[str]:
    found = [m.name for m in pkgutil.walk_packages(onnxlens.server.__path__, "onnxlens.server.")]
    return [m for m in found if not m.endswith("__main__")] + ["onnxlens.exporter.types"]


def _imports(module: str, prefixes: tuple[str, ...]) -> bool:
    code = f"import sys, {module}; print(any(m.split('.')[0] in {prefixes!r} for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip() == "True"


@pytest.mark.parametrize("module", _server_modules())
def test_server_side_modules_do_not_import_torch(module):
    assert not _imports(module, ("torch",))


def test_exporter_pipeline_does_not_import_pygls():
    assert not _imports("onnxlens.exporter.pipeline", ("pygls", "lsprotocol"))
