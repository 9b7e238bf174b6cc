"""The one rule for which directories inside a workspace hold none of the user's code: what no
finding is placed in (files.py, `Workspace.contains`), what the language server's watcher
ignores (server/lsp/exporting/project.py) and what the search for models to add skips
(server/fixits/workspace_scan.py).

* By name (`NOT_USERS`): version control data (.git, .hg, .svn), environments under the names
  tools give them (.venv, venv, .env, .tox, .nox), installed packages (site-packages,
  dist-packages, __pypackages__, node_modules), tools' caches (__pycache__, .mypy_cache,
  .pytest_cache, .ruff_cache, .ipynb_checkpoints) and editors' settings (.idea, .vscode).
* By content: an environment under any other name, told by what every environment tool writes
  at its top (`ENVIRONMENT_MARKERS`: pyvenv.cfg from venv, virtualenv and uv; conda-meta/ from
  conda).

`env/` is the user's unless it holds a marker: the name is as often a package of the user's
(reinforcement-learning environments, deployment settings) as a virtual environment, and a
virtual environment of that name holds a pyvenv.cfg like any other. `.venv`, `venv` and `.env`
name nothing else, so they are decided by name alone, marker or not.

Torch-free: names, and one stat per directory for the markers.
"""

from __future__ import annotations

import os

NOT_USERS = frozenset({
    ".git", ".hg", ".svn",
    ".venv", "venv", ".env", ".tox", ".nox",
    "site-packages", "dist-packages", "__pypackages__", "node_modules",
    "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".ipynb_checkpoints",
    ".idea", ".vscode",
})

ENVIRONMENT_MARKERS = ("pyvenv.cfg", "conda-meta")


def is_environment(directory: str) -> bool:
    """`directory` is a Python environment (it holds a marker), whatever its name."""
    return any(os.path.exists(os.path.join(directory, marker)) for marker in ENVIRONMENT_MARKERS)


def not_users_directory(directory: str) -> bool:
    """`directory` holds none of the user's code: its name says so, or it is an environment."""
    return os.path.basename(directory.rstrip(os.sep)) in NOT_USERS or is_environment(directory)


def under_not_users(root: str, path: str) -> bool:
    """A directory between `root` (not counted) and `path` (not counted: a file, or a directory
    asked about on its own with `not_users_directory`) holds none of the user's code. `path` is
    under `root`; names are checked before any directory is looked at."""
    parts = os.path.relpath(path, root).split(os.sep)[:-1]
    if any(part in NOT_USERS for part in parts):
        return True
    return any(is_environment(os.path.join(root, *parts[:i])) for i in range(1, len(parts) + 1))
