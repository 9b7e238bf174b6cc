"""A cached result holds only while the modules it imported, and those it could not find, are as
they were (`No module named 'tqdm'` still reported, `(cached)`, after `pip install
tqdm`). Real `onnxlens check` processes.

* An installed package: run by a real virtual environment's interpreter, a real package built
  into wheels and installed, upgraded, reinstalled there with pip
  (tests/support/environments.py). The model multiplies by the installed package's factor, so
  the exported .onnx (run with onnxruntime) tells which version the export imported.
* A module of the workspace: `helpers.py`, or a module of a package of it, written after the
  failure; the pre-commit hook's `--changed` reaches the target through it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from tests.support.environments import PACKAGE, build_wheel, install, installed_version, make_environment
from tests.support.net_workspace import check_json, write_workspace
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker

# The `net` target's model (tests/support/net_workspace.py: its config, its cache entry).
MODEL = f'''import torch
from {PACKAGE} import scale


class Net(torch.nn.Module):
    def forward(self, x):
        return scale(x)


def build():
    return Net()


def inputs():
    return (torch.randn(2, 3),)
'''


@pytest.fixture(scope="module")
def wheels(tmp_path_factory):
    """Version 1.0 (×2), 2.0 (×3) and 2.0 built again from changed source (×4)."""
    work = tmp_path_factory.mktemp("wheels")
    return {"1.0": build_wheel(work, "1.0", 2), "2.0": build_wheel(work, "2.0", 3),
            "2.0 rebuilt": build_wheel(work, "2.0", 4)}


def factor_of(onnx_path: Path) -> float:
    """What the exported model multiplies by, as onnxruntime computes it."""
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    [output] = session.run(None, {session.get_inputs()[0].name: np.ones((2, 3), dtype=np.float32)})
    return float(output.flat[0])


def test_installing_upgrading_and_reinstalling_a_package_each_export_again(wheels, tmp_path):
    environment = make_environment(tmp_path / "venv")
    workspace, user = tmp_path / "workspace", tmp_path / "user-cache"
    write_workspace(workspace, MODEL)

    def check():
        run = check_json(workspace, user, python=environment.python)
        assert run.status in (0, 1), run.stderr
        return run.target

    missing = check()
    assert missing["status"] == "failed" and missing["cached"] is False
    assert [d["code"] for d in missing["diagnostics"]] == ["import"]
    assert f"No module named '{PACKAGE}'" in missing["diagnostics"][0]["message"]
    assert check()["cached"] is True  # nothing changed: the cache answers

    install(environment, wheels["1.0"])
    assert installed_version(environment) == "1.0"
    installed = check()
    assert installed["status"] == "ok" and installed["cached"] is False, installed["diagnostics"]
    assert factor_of(workspace / installed["onnx"]) == 2.0
    assert check()["cached"] is True

    install(environment, wheels["2.0"])
    assert installed_version(environment) == "2.0"
    upgraded = check()
    assert upgraded["status"] == "ok" and upgraded["cached"] is False
    assert factor_of(workspace / upgraded["onnx"]) == 3.0

    # The same version again, built from other source: only the installation itself differs.
    install(environment, wheels["2.0 rebuilt"], reinstall=True)
    reinstalled = check()
    assert reinstalled["status"] == "ok" and reinstalled["cached"] is False
    assert factor_of(workspace / reinstalled["onnx"]) == 4.0


@pytest.mark.parametrize("module", ["helpers", "blocks.helpers"])
def test_a_workspace_module_written_after_the_failure_exports_again(tmp_path, module):
    workspace, user = tmp_path / "workspace", tmp_path / "user-cache"
    write_workspace(workspace, MODEL.replace(f"from {PACKAGE} import", f"from {module} import"))
    if "." in module:
        write(workspace / "blocks" / "__init__.py", "")  # the package is there, its module is not
    helpers = workspace / (module.replace(".", "/") + ".py")

    missing = check_json(workspace, user).target
    assert missing["status"] == "failed" and missing["cached"] is False
    assert f"No module named '{module}'" in missing["diagnostics"][0]["message"]
    assert check_json(workspace, user).target["cached"] is True

    write(helpers, "def scale(x):\n    return x * 5\n")
    reached = check_json(workspace, user, "--changed", str(helpers))  # as the pre-commit hook runs it
    assert reached.target["status"] == "ok" and reached.target["cached"] is False, reached.target["diagnostics"]
    assert factor_of(workspace / reached.target["onnx"]) == 5.0
