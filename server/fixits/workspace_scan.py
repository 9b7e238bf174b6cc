"""The targets a whole workspace could have: what `onnxlens init` adds and what the language
server offers for a workspace folder without a config ("Add targets").

Every .py file under the root that imports torch, outside hidden directories, build output,
tests and what holds none of the user's code (exporter/locations/directories.py: environments,
installed packages, node_modules ...); in each, the candidates
(server/fixits/candidates.py) that are models of their own (server/fixits/workspace_models.py) and
that no target exports yet, each with how the workspace builds and calls it
(server/fixits/model_usage.py: all the files read, and the Markdown documents at the root).

The scan is bounded, so that a workspace folder that is a home directory or `/` costs seconds,
not the whole disk: at most MAX_DEPTH directories deep, MAX_DIRECTORIES directories and
MAX_FILES Python files, MAX_MODEL_FILES files with candidates (each is parsed again to plan its
edit), MAX_SECONDS for the search; only regular files up to MAX_FILE_BYTES are read
(`readable_source`), each parsed once. A scan that
stopped says why (`Scan.stopped`); what it found until then is kept. The language server runs
it in a helper process (server/offload.py), which it kills to cancel the scan.

Torch-free and LSP-free; reads files, writes nothing (server/fixits/new_targets.py plans the edits).
"""

from __future__ import annotations

import ast
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from onnxlens.exporter.locations.directories import not_users_directory
from onnxlens.server.fixits.model_usage import module_name, workspace_index
from onnxlens.server.fixits.candidates import Candidate, candidates_of, readable_source, tree_imports_torch
from onnxlens.server.fixits.new_targets import Choice, NewTargets, NewTargetsError, config_file_for, configured_models, \
    is_configured, plan_targets
from onnxlens.server.fixits.workspace_models import is_model, workspace_parts

# The user's, but where no model of its own is defined: build output (copies of the package) and
# tests (model_usage.py reads them for how the models are built and called).
NO_MODELS_DIRS = frozenset({"build", "dist", "tests", "test"})
MAX_DEPTH = 12
MAX_DIRECTORIES = 20_000
MAX_FILES = 5_000
MAX_MODEL_FILES = 200
MAX_SECONDS = 30.0


@dataclass
class Scan:
    """What a scan found, and why it stopped early (None: it covered the whole workspace)."""

    choices: list[Choice] = field(default_factory=list)
    stopped: str | None = None


@dataclass
class WorkspacePlan:
    """`onnxlens init`'s edits for a workspace: None when it has no new candidates or they
    cannot be added (`problem` says why); `stopped`: why the scan stopped early, if it did."""

    new_targets: NewTargets | None
    stopped: str | None = None
    problem: str | None = None


class _Budget:
    def __init__(self) -> None:
        self.deadline = time.monotonic() + MAX_SECONDS
        self.directories = 0
        self.stopped: str | None = None

    def out_of_time(self) -> bool:
        if time.monotonic() <= self.deadline:
            return False
        self.stopped = self.stopped or f"it took over {MAX_SECONDS:g} s"
        return True

    def walk_ends(self) -> bool:
        """Time, directories or files are used up: the walk stops (the files found are read)."""
        if self.directories > MAX_DIRECTORIES:
            self.stopped = self.stopped or f"it reached {MAX_DIRECTORIES} directories"
        return self.stopped is not None or self.out_of_time()


def _skipped(directory: str, name: str) -> bool:
    """Not searched: hidden directories, NO_MODELS_DIRS, and what holds none of the user's code
    (exporter/locations/directories.py)."""
    return name.startswith(".") or name in NO_MODELS_DIRS or not_users_directory(os.path.join(directory, name))


def _python_files(root: Path, budget: _Budget) -> list[Path]:
    """The workspace's own Python files, sorted (test files left out), within the budget."""
    found: list[Path] = []
    depth_of_root = str(root).rstrip(os.sep).count(os.sep)
    for directory, subdirectories, files in os.walk(root):
        budget.directories += 1
        if budget.walk_ends():
            subdirectories[:] = []
            break
        if directory.count(os.sep) - depth_of_root >= MAX_DEPTH:
            subdirectories[:] = []
        else:
            subdirectories[:] = sorted(d for d in subdirectories if not _skipped(directory, d))
        found += [Path(directory, f) for f in sorted(files)
                  if f.endswith(".py") and not f.startswith(("test_", "conftest")) and not f.endswith("_test.py")]
        if len(found) >= MAX_FILES:
            budget.stopped = f"it reached {MAX_FILES} Python files"
            del found[MAX_FILES:]
            break
    return sorted(found)


def workspace_choices(root: Path) -> Scan:
    """The candidates of the workspace at `root` worth a target, in file order
    (server/fixits/workspace_models.py says which), each with how the workspace builds and calls it."""
    root = root.resolve()
    budget = _Budget()
    configured = configured_models(config_file_for(root))
    scan = Scan()
    parsed: dict[Path, tuple[str, ast.Module]] = {}
    candidates: dict[Path, list[Candidate]] = {}
    for file in _python_files(root, budget):
        if budget.out_of_time():
            break
        try:
            if not readable_source(file):
                continue
            text = file.read_text(encoding="utf-8")
            parsed[file] = (text, ast.parse(text))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if tree_imports_torch(parsed[file][1]):
            candidates[file] = candidates_of(parsed[file][1])
            if sum(bool(found) for found in candidates.values()) >= MAX_MODEL_FILES:
                budget.stopped = budget.stopped or f"it found models in {MAX_MODEL_FILES} files"
                break
    scan.stopped = budget.stopped
    if not any(candidates.values()):
        return scan
    modules = {file: module_name(root, file) or file.stem for file in candidates}
    index = workspace_index(root, parsed)
    parts = workspace_parts({modules[file]: found for file, found in candidates.items()}, index.defining_module)
    for file, found in candidates.items():
        for candidate in found:
            built_elsewhere = candidate.kind == "class" and index.built_outside_models(candidate.name, modules[file])
            if is_model(candidate, found, modules[file], parts, built_elsewhere) and \
                    not is_configured(file, candidate, found, configured):
                usage = index.usage(candidate, parsed[file][1], module_name(root, file))
                scan.choices.append(Choice(file.resolve(), candidate, usage))
    return scan


def plan_workspace(root: Path) -> WorkspacePlan:
    """The scan, then one edit adding a target per candidate found (server/fixits/new_targets.py)."""
    scan = workspace_choices(root)
    if not scan.choices:
        return WorkspacePlan(None, scan.stopped)
    try:
        return WorkspacePlan(plan_targets(root.resolve(), scan.choices), scan.stopped)
    except NewTargetsError as error:
        return WorkspacePlan(None, scan.stopped, str(error))
