"""One rule for the directories of a workspace that hold none of the user's code
(exporter/locations/directories.py), and its three users agreeing on a real tree on disk:
findings (`Workspace.contains`), the language server's watcher (`Project.is_ignored`,
`is_ignored_dir`) and `onnxlens init`'s search for models (server/fixits/workspace_scan.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from onnxlens.exporter.locations.directories import NOT_USERS, not_users_directory, under_not_users
from onnxlens.exporter.locations.files import Workspace
from onnxlens.server.fixits.workspace_scan import workspace_choices
from onnxlens.server.lsp.exporting.project import Project, norm

from tests.support.workspace import write

MODEL = "import torch\nfrom torch import nn\n\n\nclass {name}(nn.Module):\n    def forward(self, x):\n        return x\n"
CONFIG = '[tool.onnxlens]\n\n[[tool.onnxlens.target]]\nmodel = "models/configured.py:Configured"\ninputs = "models/configured.py:inputs"\n'

# file -> (model class written in it, whether it is the user's)
TREE = {
    "models/net.py": ("Mine", True),
    "env/agents.py": ("Agent", True),  # a package named env: reinforcement-learning environments
    "env2/lib/net.py": ("InVenv", False),  # a virtual environment under another name
    "conda/lib/net.py": ("InConda", False),
    ".venv/lib/net.py": ("DotVenv", False),
    "venv/lib/net.py": ("Venv", False),
    "vendor/site-packages/pkg/net.py": ("Installed", False),
    "web/node_modules/pkg/net.py": ("InNodeModules", False),
}


@pytest.fixture
def workspace(tmp_path):
    for file, (name, _) in TREE.items():
        write(tmp_path / file, MODEL.format(name=name))
    write(tmp_path / "env2" / "pyvenv.cfg", "home = /usr/bin\n")
    (tmp_path / "conda" / "conda-meta").mkdir()
    write(tmp_path / "models" / "configured.py", MODEL.format(name="Configured") + "\n\ndef inputs():\n    return (torch.ones(1),)\n")
    write(tmp_path / "pyproject.toml", CONFIG)
    return tmp_path


def test_findings_the_watcher_and_the_search_for_models_agree(workspace):
    files = Workspace(str(workspace), str(workspace / ".onnxlens"))
    project = Project(workspace / "pyproject.toml")
    project.load()
    searched = {choice.candidate.name for choice in workspace_choices(workspace).choices}
    for file, (name, users) in TREE.items():
        path = norm(workspace / file)
        assert files.contains(path) is users, file
        assert project.is_ignored(path) is not users, file
        assert (name in searched) is users, file
    for directory in ("env2", "conda", ".venv", "venv", "vendor/site-packages", "web/node_modules"):
        assert project.is_ignored_dir(norm(workspace / directory)), directory
    assert not project.is_ignored_dir(norm(workspace / "env")) and not project.is_ignored_dir(norm(workspace / "models"))


def test_a_plain_env_directory_becomes_an_environment_when_it_gets_a_marker(tmp_path):
    write(tmp_path / "env" / "agents.py", "")
    assert not not_users_directory(str(tmp_path / "env"))
    assert not under_not_users(str(tmp_path), str(tmp_path / "env" / "agents.py"))
    write(tmp_path / "env" / "pyvenv.cfg", "home = /usr/bin\n")
    assert not_users_directory(str(tmp_path / "env"))
    assert under_not_users(str(tmp_path), str(tmp_path / "env" / "agents.py"))


@pytest.mark.parametrize("name", sorted(NOT_USERS))
def test_each_name_of_the_rule_is_not_the_users_at_any_depth(tmp_path, name):
    deep = tmp_path / "src" / name / "pkg" / "module.py"
    assert under_not_users(str(tmp_path), str(deep))
    assert not under_not_users(str(tmp_path), str(tmp_path / "src" / f"{name}_x" / "module.py"))


def test_the_root_itself_is_never_judged_by_its_name(tmp_path):
    root = tmp_path / "venv"  # a workspace checked out into a directory named like an environment
    write(root / "models" / "net.py", "")
    assert Workspace(str(root)).contains(str(root / "models" / "net.py"))
    assert not under_not_users(str(root), str(root / "models" / "net.py"))
