"""The CI recipes of docs/: the GitHub Actions workflow is valid for GitHub (its workflow schema, as
check-jsonschema ships it, run as its own command) and every `onnxlens` command in it is one the
CLI accepts."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import yaml

from onnxlens.server.cli import _parser
from tests.support.workspace import REPO

WORKFLOW = REPO / "docs" / "ci" / "github-actions.yml"


def test_the_workflow_is_a_valid_github_actions_workflow():
    checker = Path(sys.executable).parent / "check-jsonschema"
    process = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
                             capture_output=True, text=True, timeout=120)
    assert process.returncode == 0, process.stdout + process.stderr


def _onnxlens_commands() -> list[list[str]]:
    """Each `onnxlens ...` invocation of the workflow's `run` steps, its shell continuation lines
    joined, matrix expressions given a value, redirections and `||` tails dropped."""
    commands = []
    for job in yaml.safe_load(WORKFLOW.read_text())["jobs"].values():
        for step in job["steps"]:
            script = step.get("run", "").replace("\\\n", " ")
            for line in script.splitlines():
                match = re.search(r"\.venv/bin/onnxlens (.+)", line)
                if match:
                    text = re.sub(r"\$\{\{ matrix.shard \}\}", "1", match.group(1))
                    text = text.replace('"${baseline[@]}"', "--baseline onnxlens-baseline.json")
                    commands.append(shlex.split(re.split(r"\s*(?:>|\|\|)", text)[0]))
    return commands


def test_every_onnxlens_command_of_the_workflow_parses():
    commands = _onnxlens_commands()
    assert {c[0] for c in commands} == {"check", "merge"} and len(commands) == 3
    for command in commands:
        args = _parser().parse_args(command)  # a mistake exits (SystemExit 2)
        assert args.command == command[0]
    check = _parser().parse_args(next(c for c in commands if c[0] == "check"))
    assert (check.shard, check.format) == ("1/4", "sarif") and check.save_baseline and check.baseline


def test_the_matrix_and_the_shard_count_agree():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    shards = workflow["jobs"]["check"]["strategy"]["matrix"]["shard"]
    assert shards == list(range(1, len(shards) + 1))
    assert f"--shard ${{{{ matrix.shard }}}}/{len(shards)}" in WORKFLOW.read_text()
