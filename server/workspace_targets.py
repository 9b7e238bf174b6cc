"""The targets a whole workspace could have: what `onnxlens init` adds and what the language
server offers for a workspace folder without a config ("Add targets").

Every .py file under the root that imports torch, outside hidden directories, virtual
environments, site-packages, build output, node_modules and tests; in each, the top-level
candidates (server/target_candidates.py) that no target exports yet:

* every factory function that can be called without arguments;
* every class whose constructor takes no arguments, unless a factory of its file returns it
  (the factory is how its author builds it: `build_encoder` rather than `Encoder`).

Torch-free and LSP-free; reads files, writes nothing (server/target_fix.py plans the edits).
"""

from __future__ import annotations

import os
from pathlib import Path

from onnxlens.server.target_candidates import MAX_FILE_BYTES, find_candidates, imports_torch
from onnxlens.server.target_fix import Choice, config_file_for, configured_models, is_configured

SKIPPED_DIRS = frozenset({".venv", "venv", "env", "site-packages", "build", "dist", "node_modules", "tests",
                          "test", "__pycache__"})


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
    """The candidates of the workspace at `root` worth a target, in file order."""
    root = root.resolve()
    configured = configured_models(config_file_for(root))
    choices = []
    for file in python_files(root):
        try:
            if file.stat().st_size > MAX_FILE_BYTES:
                continue
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if not imports_torch(text):
            continue
        candidates = find_candidates(text)
        built = {c.model_class for c in candidates if c.kind == "factory" and not c.needs_arguments}
        for candidate in candidates:
            if not candidate.top_level or candidate.needs_arguments or is_configured(file, candidate, candidates, configured):
                continue
            if candidate.kind == "class" and candidate.name in built:
                continue
            choices.append(Choice(file.resolve(), candidate))
    return choices
