"""`onnxlens --version`: onnxlens, torch, onnx, onnxscript, onnxruntime, the worker's interpreter
and the adapter of torch's internals its torch selects, read without importing torch."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path

# torch minor release -> the adapter onnxlens must use for it (exporter/torch_internals/).
EXPECTED_ADAPTERS = {"2.12": "torch_2_12", "2.13": "torch_2_13", "2.14": "torch_2_13", "2.15": "torch_2_13"}


def _version(env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    script = Path(sys.executable).parent / "onnxlens"
    return subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def test_version_names_the_stack_the_interpreter_and_the_adapter():
    process = _version()
    assert process.returncode == 0, process.stderr
    lines = process.stdout.splitlines()
    torch_version = importlib.metadata.version("torch")
    assert lines[0] == f"onnxlens {importlib.metadata.version('onnxlens')}"
    assert lines[1] == (f"torch {torch_version}, onnx {importlib.metadata.version('onnx')}, "
                        f"onnxscript {importlib.metadata.version('onnxscript')}, "
                        f"onnxruntime {importlib.metadata.version('onnxruntime')}")
    # The worker's interpreter is the one running the command: `python` and `python3` in a venv
    # are one interpreter (the console script names whichever pip was run with).
    worker = re.fullmatch(r"worker python (\S+) \(Python (\S+)\).*", lines[2])
    assert worker and os.path.realpath(worker[1]) == os.path.realpath(sys.executable), lines[2]
    assert worker[2] == sys.version.split()[0]
    minor = ".".join(torch_version.split(".")[:2])
    assert lines[3].startswith(f"torch adapter {EXPECTED_ADAPTERS[minor]} (torch ")
    assert len(lines) == 4 and not process.stderr


def test_version_of_an_unknown_torch_names_the_public_path():
    """ONNXLENS_TORCH_VERSION is the torch version the adapter selection sees (an unreleased
    torch cannot be installed to test this)."""
    process = _version({"ONNXLENS_TORCH_VERSION": "2.99.0"})
    assert process.returncode == 0, process.stderr
    assert process.stdout.splitlines()[3] == ("torch adapter public (no adapter: the public torch.onnx.export), "
                                              "as for torch 2.99.0 (ONNXLENS_TORCH_VERSION)")


def test_version_does_not_import_torch():
    code = ("import sys\nfrom onnxlens.server import cli\n"
            "try:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print('torch imported' if 'torch' in sys.modules else 'torch not imported')")
    process = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert process.stdout.splitlines()[-1] == "torch not imported", process.stdout + process.stderr


def test_version_goes_with_a_command_too():
    # Like --help: it answers and exits, whatever else is on the line.
    script = Path(sys.executable).parent / "onnxlens"
    process = subprocess.run([str(script), "--version", "check"], capture_output=True, text=True, timeout=60)
    assert process.returncode == 0 and process.stdout.startswith("onnxlens "), process.stderr
