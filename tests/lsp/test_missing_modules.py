"""A model that cannot import a module is exported again once the module is there (not
`No module named 'tqdm'` still reported, from the cache, after `pip install tqdm`), without a
save: the real server, a real client.

* The module is the workspace's own (`helpers.py`, written on disk by another tool): the path
  where it would be is part of the target's closure.
* The module is an installed package: pip installs it into a real virtual environment whose
  interpreter runs the server (tests/support/environments.py); the server watches the
  directories that interpreter imports from, and an upgrade exports again with the new version.
"""

from __future__ import annotations

import pytest

from tests.cli.test_missing_modules import MODEL, factor_of
from tests.support.environments import PACKAGE, build_wheel, install, make_environment
from tests.support.lsp import Client
from tests.support.net_workspace import write_workspace
from tests.support.workspace import write

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]  # the language server and the export worker as processes

HELPERS = "def scale(x):\n    return x * 5\n"


async def _failed_import(client: Client, net, module: str) -> None:
    diagnostic = await client.wait_diagnostic(net, "import", 2)
    assert f"No module named '{module}'" in diagnostic.message


async def test_a_module_written_into_the_workspace_exports_the_target_that_missed_it(tmp_path):
    workspace = tmp_path / "workspace"
    write_workspace(workspace, MODEL.replace(f"from {PACKAGE} import", "from helpers import"))
    net = workspace / "net.py"
    client = await Client.launch(workspace, settings={"debounceMs": 150})
    try:
        await _failed_import(client, net, "helpers")
        before = await client.exports_finished("net", 1)

        write(workspace / "helpers.py", HELPERS)  # by another tool: no didSave

        data = await client.exports_finished("net", before["per_target"]["net"]["finished"] + 1)
        assert data["last"]["net"]["reason"] == "helpers.py changed on disk"
        assert data["last"]["net"]["status"] == "ok"
        await client.wait_for(lambda: client.cleared(net), "net.py's import error cleared")
        assert factor_of(workspace / ".onnxlens" / "net.onnx") == 5.0
    finally:
        await client.close()


async def test_installing_then_upgrading_the_package_exports_again(tmp_path):
    environment = make_environment(tmp_path / "venv")
    workspace = tmp_path / "workspace"
    write_workspace(workspace, MODEL)
    net = workspace / "net.py"
    client = await Client.launch(workspace, settings={"debounceMs": 150}, python=environment.python)
    try:
        await _failed_import(client, net, PACKAGE)
        finished = (await client.exports_finished("net", 1))["per_target"]["net"]["finished"]

        install(environment, build_wheel(tmp_path / "wheels", "1.0", 2))
        data = await client.exports_finished("net", finished + 1)
        assert data["last"]["net"]["reason"] == "installed packages changed"
        assert data["last"]["net"]["status"] == "ok"
        await client.wait_for(lambda: client.cleared(net), "net.py's import error cleared")
        assert factor_of(workspace / ".onnxlens" / "net.onnx") == 2.0

        install(environment, build_wheel(tmp_path / "wheels", "2.0", 3))
        data = await client.exports_finished("net", finished + 2)
        assert data["last"]["net"]["reason"] == "installed packages changed"
        assert factor_of(workspace / ".onnxlens" / "net.onnx") == 3.0
    finally:
        await client.close()
