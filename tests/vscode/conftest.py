"""Fixtures for the VS Code extension's tests: its npm dependencies and its .vsix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.vscode.vscode_harness import EXTENSION_DIR, npm_ci, run


@pytest.fixture(scope="session")
def extension_node_modules() -> Path:
    """vscode-extension/node_modules as package-lock.json says (npm ci, once per lock file)."""
    npm_ci()
    return EXTENSION_DIR / "node_modules"


@pytest.fixture(scope="session")
def vsix(extension_node_modules: Path) -> Path:
    """The extension packaged as users install it (`npm run package`)."""
    out = EXTENSION_DIR / "onnxlens.vsix"
    out.unlink(missing_ok=True)
    run(["npm", "run", "package"], cwd=EXTENSION_DIR)
    assert out.exists(), "npm run package wrote no onnxlens.vsix"
    return out
