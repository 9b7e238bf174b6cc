"""The exit status rule of `onnxlens check` on hand-made results (a real `mismatch` warning needs
a model whose ONNX output differs from torch's, which the example workspace does not have)."""

from __future__ import annotations

from pathlib import Path

from onnxlens.exporter.types import ExportResult, Finding, Location
from onnxlens.server.check.formats import CheckRun
from onnxlens.server.cli import exit_status
from onnxlens.server.config import load_config


def make_run(tmp_path: Path, *results: ExportResult, config: str | None = None) -> CheckRun:
    (tmp_path / "m.py").write_text("")
    (tmp_path / "onnxlens.toml").write_text(config or '[[target]]\nmodel = "m.py:a"\ninputs = "m.py:b"\n')
    return CheckRun(config=load_config(tmp_path / "onnxlens.toml"), results=list(results))


def mismatch(tmp_path: Path) -> Finding:
    return Finding(code="mismatch", message="differs", stage="verify", location=Location(str(tmp_path / "m.py"), 1))


def test_no_findings_is_0(tmp_path):
    assert exit_status(make_run(tmp_path, ExportResult(target="a", status="ok"))) == 0


def test_warnings_do_not_fail(tmp_path):
    run = make_run(tmp_path, ExportResult(target="a", status="ok", findings=[mismatch(tmp_path)]))
    assert run.findings[0][1].severity == "warning"
    assert exit_status(run) == 0


def test_an_error_finding_is_1(tmp_path):
    error = Finding(code="unsupported-op", message="no translation", stage="scan")
    run = make_run(tmp_path, ExportResult(target="a", status="failed", findings=[error, mismatch(tmp_path)]))
    assert exit_status(run) == 1


def test_a_failure_without_any_finding_is_still_1(tmp_path):
    assert exit_status(make_run(tmp_path, ExportResult(target="a", status="failed"))) == 1


def test_config_errors_are_2_even_with_clean_exports(tmp_path):
    config = 'verfy = true\n[[target]]\nmodel = "m.py:a"\ninputs = "m.py:b"\n'
    run = make_run(tmp_path, ExportResult(target="a", status="ok"), config=config)
    assert len(run.config.findings) == 1
    assert exit_status(run) == 2
