"""The targets a whole workspace could have: what `onnxlens init` adds and what the language
server offers for a workspace folder without a config ("Add targets").

Every .py file under the root that imports torch, outside hidden directories, virtual
environments, site-packages, build output, node_modules and tests; in each, the candidates
(server/target_candidates.py) that are models of their own (server/workspace_models.py) and
that no target exports yet, each with how the workspace builds and calls it
(server/model_usage.py: all the files read, and the Markdown documents at the root).

Torch-free and LSP-free; reads files, writes nothing (server/target_fix.py plans the edits).
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from onnxlens.server.model_usage import module_name, workspace_index
from onnxlens.server.target_candidates import Candidate, candidates_of, tree_imports_torch
from onnxlens.server.target_fix import Choice, config_file_for, configured_models, is_configured
from onnxlens.server.workspace_models import is_model, workspace_parts

SKIPPED_DIRS = frozenset({".venv", "venv", "env", "site-packages", "build", "dist", "node_modules", "tests",
                          "test", "__pycache__"})
MAX_FILE_BYTES = 2_000_000  # a generated or vendored blob is no model of the user's


def python_files(root: Path) -> list[Path]:
    """The workspace's own Python files, sorted (test files left out)."""
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d not in SKIPPED_DIRS
                                   and not os.path.isfile(os.path.join(directory, d, "pyvenv.cfg")))
        found += [Path(directory, f) for f in files
                  if f.endswith(".py") and not f.startswith(("test_", "conftest")) and not f.endswith("_test.py")]
    return sorted(found)


def workspace_choices(root: Path) -> list[Choice]:
    """The candidates of the workspace at `root` worth a target, in file order
    (server/workspace_models.py says which), each with how the workspace builds and calls it."""
    root = root.resolve()
    configured = configured_models(config_file_for(root))
    parsed: dict[Path, tuple[str, ast.Module]] = {}
    candidates: dict[Path, list[Candidate]] = {}
    for file in python_files(root):
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            text = file.read_text(encoding="utf-8")
            parsed[file] = (text, ast.parse(text))
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
            continue
        if tree_imports_torch(parsed[file][1]):
            candidates[file] = candidates_of(parsed[file][1])
    if not any(candidates.values()):
        return []
    modules = {file: module_name(root, file) or file.stem for file in candidates}
    index = workspace_index(root, parsed)
    parts = workspace_parts({modules[file]: found for file, found in candidates.items()}, index.defining_module)
    chosen = [(file, candidate) for file, found in candidates.items() for candidate in found
              if is_model(candidate, found, modules[file], parts,
                          candidate.kind == "class" and index.built_outside_models(candidate.name, modules[file]))
              and not is_configured(file, candidate, found, configured)]
    choices = []
    for file, candidate in chosen:
        usage = index.usage(candidate, parsed[file][1], module_name(root, file))
        choices.append(Choice(file.resolve(), candidate, usage))
    return choices
