"""What the real-library tests share: workspaces (written from text, or copied from workspaces/,
one per kind of failure), `onnxlens check` as a real subprocess, the language server through the
test client, the stock exporter in a subprocess of its own (the bytes to compare with),
stand-ins on a `site-packages` path, and lines found by their text in installed libraries (the
pinned versions `scripts/setup` installs; tests never hard-code line numbers: a library upgrade
that moves the line keeps them right, one that removes it fails them loudly)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path
from typing import Any

from benchmarks.zoo.score import same_files  # noqa: F401 - the zoo's byte-identity rule, shared
from tests.support.lsp import Client, uri_path
from tests.support.workspace import line_of, write

STANDINS = Path(__file__).parent / "standins"
WORKSPACES = Path(__file__).resolve().parent / "workspaces"
SITE = Path(sysconfig.get_paths()["purelib"]).resolve()
CLI = [sys.executable, "-m", "onnxlens.server.cli"]


def workspace(root: Path, files: dict[str, str], targets: str, *, verify: bool = True) -> Path:
    """A workspace at `root`: `files` (dedented) and a pyproject.toml with `targets` (TOML)."""
    for name, text in files.items():
        write(root / name, textwrap.dedent(text).lstrip())
    write(root / "pyproject.toml", f"[tool.onnxlens]\nverify = {str(verify).lower()}\n\n"
          + textwrap.dedent(targets).lstrip())
    return root


def copy_workspace(name: str, into: Path) -> Path:
    """A copy of workspaces/NAME under `into` (the outputs go next to it)."""
    target = into / name
    shutil.copytree(WORKSPACES / name, target, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    return target


def site_packages(into: Path, *standins: str) -> Path:
    """A directory named site-packages holding the named stand-ins (see standins/README.md):
    on PYTHONPATH, onnxlens treats them as installed libraries."""
    site = into / "site-packages"
    for name in standins:
        shutil.copytree(STANDINS / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    return site


def environment(site: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def check(path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    """`onnxlens check PATH --format json --no-cache ARGS`: the process and its JSON."""
    process = subprocess.run([*CLI, "check", str(path), "--format", "json", "--no-cache", *args],
                             capture_output=True, text=True, timeout=600, env=env or environment())
    assert process.stdout.strip(), f"no JSON output; stderr:\n{process.stderr[-4000:]}"
    assert "Traceback" not in process.stderr, process.stderr[-3000:]  # never a traceback of ours
    return process, json.loads(process.stdout)


def check_json(path: Path) -> dict[str, Any]:
    return check(path)[1]


def diagnostics(data: dict[str, Any], target: str) -> list[dict[str, Any]]:
    return next(t for t in data["targets"] if t["name"] == target)["diagnostics"]


STOCK_EXPORT = '''
import importlib, sys
import torch
sys.path.insert(0, sys.argv[1])
module = importlib.import_module(sys.argv[2])
model = getattr(module, sys.argv[3])()
inputs = getattr(module, sys.argv[4])()
args, kwargs = ((), inputs) if isinstance(inputs, dict) else (inputs, None)  # as the config's `inputs` reads
torch.onnx.export(model, args, sys.argv[5], kwargs=kwargs, dynamo=True, verbose=False)
'''


def stock_export(root: Path, module: str, model: str, inputs: str, output: Path,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`torch.onnx.export(model(), inputs(), output, dynamo=True)` in a fresh process, the model's
    module imported from the workspace at `root` (as a user's script would)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-c", STOCK_EXPORT, str(root), module, model, inputs, str(output)],
                          capture_output=True, text=True, timeout=600, cwd=root, env=env or environment())


def library_file(module: str) -> Path:
    """The installed source file of `module` (a library's), resolved."""
    spec = __import__("importlib.util").util.find_spec(module)
    assert spec is not None and spec.origin, f"{module} is not installed"
    return Path(spec.origin).resolve()


def library_line(relative: str, needle: str, occurrence: int = 1) -> tuple[str, int]:
    """(resolved path, 1-based line) of the installed library line holding `needle`; `relative`
    to site-packages (`kornia/core/utils.py`)."""
    path = SITE / relative
    assert path.is_file(), f"{relative} is not installed where the record says"
    return str(path), line_of(path, needle, occurrence)


def line_in(path: Path, needle: str, *, after: str | None = None) -> int:
    """1-based line of the first `needle` in `path` (after the first line holding `after`)."""
    lines = path.read_text().splitlines()
    start = 0
    if after is not None:
        start = next(i for i, text in enumerate(lines) if after in text)
    for number in range(start, len(lines)):
        if needle in lines[number]:
            return number + 1
    raise AssertionError(f"{needle!r} not in {path}" + (f" after {after!r}" if after else ""))


def errors(target: dict) -> list[dict]:
    return [d for d in target["diagnostics"] if d["severity"] == "error"]


def places(diagnostic: dict, root: Path) -> list[tuple[Path, int]]:
    """(resolved file, line) of the primary location, then of every related one (JSON paths are
    relative to the workspace `root` inside it, absolute outside)."""
    def resolved(file: str) -> Path:
        return (root / file).resolve()  # an absolute `file` stays itself

    return [(resolved(diagnostic["file"]), diagnostic["line"])] + [
        (resolved(r["file"]), r["line"]) for r in diagnostic["related"]]


def primary(diagnostic: dict[str, Any], workspace: Path) -> tuple[str, int]:
    return str((workspace / diagnostic["file"]).resolve()), diagnostic["line"]


def related_lines(diagnostic: dict[str, Any], workspace: Path) -> set[tuple[str, int]]:
    """(resolved file, line) of every related location of a JSON diagnostic."""
    return {(str(path), line) for path, line in places(diagnostic, workspace)[1:]}


async def lsp_session(workspace: Path, targets: list[str]) -> Client:
    """A language server on `workspace` (VS Code's capabilities) once it exported `targets`."""
    client = await Client.launch(workspace, editor="visual-studio-code")
    try:
        for target in targets:
            await client.exports_finished(target, 1, timeout=600)
    except BaseException:
        await client.close()
        raise
    return client


def lsp_related(diagnostic: Any) -> set[tuple[str, int]]:
    """(resolved file, 1-based line) of an LSP diagnostic's related information."""
    return {(str(uri_path(r.location.uri)), r.location.range.start.line + 1)
            for r in diagnostic.related_information or []}
