"""The extension's own unit tests (node --test, with a stand-in for the `vscode` module), run
from pytest so that scripts/test covers them and fails when they fail."""

from __future__ import annotations

import re
import zipfile

import pytest

from tests.vscode.vscode_harness import EXTENSION_DIR, run

pytestmark = pytest.mark.slow  # the extension installed with npm, built and unit-tested with node


def test_extension_unit_tests_pass(extension_node_modules):
    # `run` raises (and the test fails) on a non-zero exit: type errors or a failing test.
    output = run(["npm", "test"], cwd=EXTENSION_DIR)
    passed = re.search(r"^ℹ pass (\d+)$", output, re.M)
    failed = re.search(r"^ℹ fail (\d+)$", output, re.M)
    assert passed and failed, f"no node test summary in the output:\n{output[-3000:]}"
    assert int(failed.group(1)) == 0, output[-3000:]
    assert int(passed.group(1)) > 0, f"no unit test ran:\n{output[-3000:]}"


def test_vsix_holds_the_bundle_and_nothing_else(vsix):
    names = set(zipfile.ZipFile(vsix).namelist())
    assert "extension/dist/extension.js" in names
    assert "extension/package.json" in names
    assert "extension/images/icon.png" in names
    assert "extension/images/screenshot.png" in names  # the README shows it in the extension view
    assert not [n for n in names if "node_modules" in n or "/src/" in n or "/test/" in n], sorted(names)
