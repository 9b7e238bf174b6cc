"""README.md's "Supported versions" table is the one scripts/supported-versions writes from the
torch matrix's results (docs/supported-versions.json): nobody edits it by hand."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_readme_table_is_generated_from_the_matrix_results():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "supported-versions"), "table", "--check"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _script():
    """scripts/supported-versions as a module (it has no .py suffix)."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.SourceFileLoader("supported_versions", str(REPO / "scripts" / "supported-versions"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    return module


def test_a_junit_file_cut_short_is_a_run_that_did_not_finish(tmp_path):
    # What CI's matrix once left when its pytest broke off (the disk was full): an empty JUnit
    # file; and a truncated one. Each is recorded as tests that did not finish, not a traceback.
    script = _script()
    junit = tmp_path / "junit.xml"
    for text in ("", '<?xml version="1.0"?><testsuites><testsuite><testcase name="a"'):
        junit.write_text(text)
        outcome = script.tests_outcome(junit)
        assert outcome["unfinished"] and outcome["passed"] == 0
        assert "did not finish" in script.outcome(outcome)
    junit.write_text('<testsuites><testsuite><testcase classname="tests.x" name="a"/>'
                     '<testcase classname="tests.x" name="b"><failure/></testcase></testsuite></testsuites>')
    outcome = script.tests_outcome(junit)
    assert (outcome["passed"], outcome["failed"], outcome["failures"]) == (1, 1, ["tests/x.py::b"])
    assert "unfinished" not in outcome
