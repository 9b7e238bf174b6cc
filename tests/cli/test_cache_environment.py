"""A cached result holds only while what it was computed from is installed (issue 21: `No module
named 'tqdm'` still reported, `(cached)`, after `pip install tqdm`). Real `onnxlens check`
processes run by a real virtual environment's interpreter; a real package built into wheels and
installed into that environment with pip (tests/support/environments.py).

The model multiplies by the installed package's factor, so the exported .onnx (run with
onnxruntime) tells which version the export imported.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime
import pytest

from tests.support.environments import PACKAGE, build_wheel, install, installed_version, make_environment
from tests.support.net_workspace import check_json
from tests.support.workspace import write

CONFIG = '''[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "net"
model = "net.py:Net"
inputs = "net.py:inputs"
'''

MODEL = f'''import torch
from {PACKAGE} import scale


class Net(torch.nn.Module):
    def forward(self, x):
        return scale(x)


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
    write(workspace / "pyproject.toml", CONFIG)
    write(workspace / "net.py", MODEL)

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
