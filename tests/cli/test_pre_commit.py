"""The pre-commit hook (.pre-commit-hooks.yaml) run by `pre-commit` itself: `pre-commit try-repo`
installs it from this checkout (its uncommitted state included) into a temporary git repository
holding a team's workspace, and runs it on the staged files. Real git, real pre-commit, real
exports; the hook's `onnxlens` is this environment's (language: system)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.team import write_team
from tests.support.workspace import REPO, line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True)


def _hook(repo: Path, home: Path) -> subprocess.CompletedProcess:
    """`pre-commit try-repo <this checkout> onnxlens --verbose` (the output of a hook that passed
    too) on the repository's staged files."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "onnxlens", "--verbose"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=900)


def _stage(repo: Path, path: str, text: str) -> None:
    write(repo / path, text)
    _git(repo, "add", path)


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A git repository with a workspace of two targets (steady exports, known_bad fails), committed."""
    root = tmp_path_factory.mktemp("repo")
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "dev@example.org")
    _git(root, "config", "user.name", "dev")
    write_team(root, ("steady", "known_bad"))
    write(root / ".gitignore", ".onnxlens/\n")
    _git(root, "add", "-A")
    _git(root, "-c", "core.hooksPath=/dev/null", "commit", "-q", "-m", "main")
    return root, tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture(scope="module")
def runs(repo):
    """The hook on a sequence of staged changes, in order: each later one finds the result cache
    the earlier ones filled (as on a developer's machine)."""
    root, home = repo
    steady = (root / "models" / "steady.py").read_text()
    out = {}
    _stage(root, "models/steady.py", steady + "\n# first change\n")
    out["first, no cache yet"] = _hook(root, home)
    _stage(root, "models/steady.py", steady + "\n# second change\n")
    out["steady changed"] = _hook(root, home)
    _git(root, "reset", "-q", "models/steady.py")
    bad = (root / "models" / "known_bad.py").read_text()
    _stage(root, "models/known_bad.py", bad + "\n# a change\n")
    out["known_bad changed"] = _hook(root, home)
    _git(root, "reset", "-q", "models/known_bad.py")
    _stage(root, "README.md", "# the team's models\n")
    out["no Python file staged"] = _hook(root, home)
    _stage(root, "pyproject.toml", (root / "pyproject.toml").read_text() + "\n# a comment\n")
    out["config changed"] = _hook(root, home)
    return root, out


def test_without_a_cache_every_target_is_reached(runs):
    _, out = runs
    process = out["first, no cache yet"]
    assert process.returncode == 1, process.stdout + process.stderr
    assert "onnxlens: 2 targets reached by the 1 changed file" in process.stdout
    assert "- hook id: onnxlens" in process.stdout and "Failed" in process.stdout


def test_a_change_reaches_only_the_targets_that_import_the_file(runs):
    _, out = runs
    process = out["steady changed"]
    assert process.returncode == 0, process.stdout + process.stderr
    assert "onnxlens: 1 target reached by the 1 changed file" in process.stdout  # not known_bad
    assert "Passed" in process.stdout


def test_the_failing_target_fails_the_commit_on_its_line(runs):
    root, out = runs
    process = out["known_bad changed"]
    assert process.returncode == 1, process.stdout + process.stderr
    assert "onnxlens: 1 target reached by the 1 changed file" in process.stdout
    zeta = line_of(root / "models" / "known_bad.py", "torch.special.zeta(")
    assert f"models/known_bad.py:{zeta}:" in process.stdout and "error[unsupported-op]" in process.stdout


def test_a_commit_without_python_or_toml_files_skips_the_hook(runs):
    _, out = runs
    process = out["no Python file staged"]
    assert process.returncode == 0 and "Skipped" in process.stdout, process.stdout


def test_a_config_change_reaches_every_target(runs):
    _, out = runs
    process = out["config changed"]
    assert process.returncode == 1 and "onnxlens: 2 targets reached by the 1 changed file" in process.stdout


def test_the_hook_manifest_is_valid_for_pre_commit():
    from pre_commit.clientlib import load_manifest

    (hook,) = load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert hook["id"] == "onnxlens" and hook["require_serial"] is True
    assert hook["entry"].split() + hook["args"] == ["onnxlens", "check", "--changed"]
