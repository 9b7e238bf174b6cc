"""The workspace scan's bounds (server/fixits/workspace_scan.py): depth, directories, Python files,
time, environments and package directories skipped; a scan that stopped says why and keeps
what it found. Real directory trees on disk."""

from __future__ import annotations

import os
from pathlib import Path

from onnxlens.server.fixits import workspace_scan
from onnxlens.server.fixits.workspace_scan import MAX_DEPTH, MAX_DIRECTORIES, MAX_FILES, MAX_MODEL_FILES, plan_workspace, \
    workspace_choices
from tests.support.workspace import write

MODEL = "import torch\nfrom torch import nn\n\n\nclass {name}(nn.Module):\n    def forward(self, x):\n        return x\n"


def model(path: Path, name: str) -> None:
    write(path, MODEL.format(name=name))


def found(root: Path) -> list[str]:
    return [choice.candidate.name for choice in workspace_choices(root).choices]


def test_models_deeper_than_the_depth_bound_are_not_searched(tmp_path):
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(MAX_DEPTH)])
    model(deep / "shallow_enough.py", "Reached")
    model(deep / "one_more" / "too_deep.py", "TooDeep")
    assert found(tmp_path) == ["Reached"]


def test_environments_and_package_directories_are_skipped(tmp_path):
    model(tmp_path / "models" / "net.py", "Mine")
    model(tmp_path / "conda" / "lib" / "net.py", "InConda")
    (tmp_path / "conda" / "conda-meta").mkdir()
    model(tmp_path / "venv2" / "lib" / "net.py", "InVenv")
    write(tmp_path / "venv2" / "pyvenv.cfg", "home = /usr/bin\n")
    model(tmp_path / "usr" / "lib" / "python3" / "dist-packages" / "pkg" / "net.py", "Installed")
    assert found(tmp_path) == ["Mine"]


def test_a_fifo_named_like_a_module_does_not_block_the_scan(tmp_path):
    model(tmp_path / "models" / "net.py", "Mine")
    os.mkfifo(tmp_path / "models" / "pipe.py")  # reading it would wait for a writer forever
    assert found(tmp_path) == ["Mine"]


def test_the_directory_bound_stops_the_scan_and_keeps_what_it_found(tmp_path):
    model(tmp_path / "a_first" / "net.py", "Early")
    many = tmp_path / "m_many"
    for i in range(MAX_DIRECTORIES + 10):
        (many / f"{i:05d}").mkdir(parents=True)
    model(tmp_path / "z_last" / "net.py", "Late")
    scan = workspace_choices(tmp_path)
    assert [c.candidate.name for c in scan.choices] == ["Early"]
    assert scan.stopped == f"it reached {MAX_DIRECTORIES} directories"


def test_the_file_bound_stops_the_scan(tmp_path):
    model(tmp_path / "a_first" / "net.py", "Early")
    for i in range(MAX_FILES + 10):
        write(tmp_path / "b_many" / f"m{i:05d}.py", "x = 1\n")
    scan = workspace_choices(tmp_path)
    assert [c.candidate.name for c in scan.choices] == ["Early"]
    assert scan.stopped == f"it reached {MAX_FILES} Python files"


def test_the_model_file_bound_stops_the_scan(tmp_path):
    for i in range(MAX_MODEL_FILES + 5):
        model(tmp_path / "models" / f"m{i:04d}.py", f"Net{i}")
    scan = workspace_choices(tmp_path)
    assert [c.candidate.name for c in scan.choices] == [f"Net{i}" for i in range(MAX_MODEL_FILES)]
    assert scan.stopped == f"it found models in {MAX_MODEL_FILES} files"


def test_the_time_bound_stops_the_scan(tmp_path, monkeypatch):
    """The bound is MAX_SECONDS (30 s): set to 0 here, since no unit test waits for 30 s of
    scanning, to show that the scan stops on it and says so."""
    model(tmp_path / "models" / "net.py", "Mine")
    monkeypatch.setattr(workspace_scan, "MAX_SECONDS", 0.0)
    scan = workspace_choices(tmp_path)
    assert scan.choices == [] and scan.stopped == "it took over 0 s"


def test_a_complete_scan_says_nothing_and_plans_the_edit(tmp_path):
    model(tmp_path / "models" / "net.py", "Mine")
    plan = plan_workspace(tmp_path)
    assert plan.stopped is None and plan.problem is None
    assert [t.candidate.name for t in plan.new_targets.targets] == ["Mine"]
