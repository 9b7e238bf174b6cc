"""The server's model of a configured workspace: which files re-export which target, where the
model is defined before any export, and what a config edit changes. Real config files (a copy of
examples/), real ExportResult data; no server process."""

from __future__ import annotations

from onnxlens.exporter.types import ExportResult, Finding, Location
from onnxlens.server.lsp.exporting.project import Project, norm

from tests.support.workspace import copy_examples, line_of


def test_before_any_result_the_closure_is_the_files_the_config_names(tmp_path):
    ws = copy_examples(tmp_path)
    project = Project(ws / "pyproject.toml")
    changed, removed = project.load()
    assert changed == ["mlp", "encoder", "spectral"] and removed == []
    assert project.targets_depending_on(norm(ws / "models/spectral.py")) == ["spectral"]
    assert project.targets_depending_on(norm(ws / "models/features.py")) == []  # not known yet
    definition = project.targets["spectral"].model_definition()
    assert definition.file == norm(ws / "models/spectral.py")
    assert definition.line == line_of(ws / "models/spectral.py", "class SpectralNet")


def test_closure_learned_from_results_and_kept_across_a_failed_import(tmp_path):
    ws = copy_examples(tmp_path)
    project = Project(ws / "pyproject.toml")
    project.load()
    state = project.targets["spectral"]
    spectral, features = str(ws / "models/spectral.py"), str(ws / "models/features.py")
    state.record(ExportResult(target="spectral", status="ok", closure=[spectral, features]))
    assert project.targets_depending_on(norm(features)) == ["spectral"]
    # A syntax error in spectral.py stops the import before features.py: still a dependency.
    broken = ExportResult(target="spectral", status="failed", closure=[spectral], findings=[
        Finding(code="import", message="invalid syntax", stage="load", location=Location(file=spectral, line=3))])
    state.record(broken)
    assert project.targets_depending_on(norm(features)) == ["spectral"]
    # A clean result is the truth again: a file no longer imported stops counting.
    state.record(ExportResult(target="spectral", status="ok", closure=[spectral]))
    assert project.targets_depending_on(norm(features)) == []


def test_config_edit_reports_changed_and_removed_targets(tmp_path):
    ws = copy_examples(tmp_path)
    config = ws / "pyproject.toml"
    project = Project(config)
    project.load()
    text = config.read_text()
    start = text.index("# Exports cleanly, with a dynamic batch")
    end = text.index("# Fails in several places")
    config.write_text(text[:start] + text[end:].replace('name = "spectral"', 'name = "spectral"\nverify = false'))
    changed, removed = project.load()
    assert changed == ["spectral"] and removed == ["encoder"]


def test_outputs_vcs_and_environments_are_ignored(tmp_path):
    ws = copy_examples(tmp_path)
    project = Project(ws / "pyproject.toml")
    project.load()
    root = norm(ws)
    assert project.is_ignored(f"{root}/.onnxlens/mlp.onnx")
    assert project.is_ignored(f"{root}/.git/index")
    assert project.is_ignored(f"{root}/models/__pycache__/mlp.cpython-311.pyc")
    assert project.is_ignored(f"{root}/.venv/lib/site.py")
    assert not project.is_ignored(f"{root}/models/mlp.py")
    assert project.is_ignored_dir(f"{root}/.onnxlens") and not project.is_ignored_dir(f"{root}/models")
