"""Outputs stay in the workspace, and references outside it say so (server/config.py): the real
CLI process on configs whose `output`, `output-dir` or model reference leaves the workspace —
by `..`, by an absolute path, through a symbolic link. Each is a `config` error on its own line
and nothing is written outside; `allow-output-outside-workspace = true` lets outputs go there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.net_workspace import CONFIG, check_json, write_workspace
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


@pytest.fixture
def places(tmp_path) -> tuple[Path, Path]:
    """A workspace, and a directory beside it (outside it)."""
    root, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    write_workspace(root)
    elsewhere.mkdir()
    return root, elsewhere


def configured(root: Path, *, global_lines: str = "", target_lines: str = "") -> Path:
    config = root / "pyproject.toml"
    text = CONFIG.replace("[tool.onnxlens]\n", "[tool.onnxlens]\n" + global_lines)
    write(config, text.replace('name = "net"\n', 'name = "net"\n' + target_lines))
    return config


def check(root: Path) -> tuple[int, dict]:
    run = check_json(root, root.parent / "user-cache")
    return run.status, run.data


def the_config_error(data: dict, config: Path, line_text: str) -> str:
    [finding] = data["config_diagnostics"]
    assert finding["code"] == "config" and finding["severity"] == "error"
    assert (finding["file"], finding["line"]) == ("pyproject.toml", line_of(config, line_text))
    return finding["message"]


def nothing_in(directory: Path) -> bool:
    return not any(directory.iterdir())


@pytest.mark.parametrize("value", ["../elsewhere/net.onnx", "ABSOLUTE"])
def test_a_target_output_outside_the_workspace(places, value):
    root, elsewhere = places
    value = str(elsewhere / "net.onnx") if value == "ABSOLUTE" else value
    config = configured(root, target_lines=f'output = "{value}"\n')
    status, data = check(root)
    assert status == 2 and data["targets"] == []
    message = the_config_error(data, config, "output = ")
    assert message.startswith("`output` = ") and f" is outside the workspace {root} " in message
    assert f"(it resolves to {elsewhere / 'net.onnx'})" in message
    assert "`allow-output-outside-workspace = true`" in message
    assert nothing_in(elsewhere)


def test_an_output_dir_through_a_symbolic_link_out_of_the_workspace(places):
    root, elsewhere = places
    (root / "models-out").symlink_to(elsewhere)
    config = configured(root, global_lines='output-dir = "models-out"\n')
    status, data = check(root)
    assert status == 2 and data["targets"] == []
    message = the_config_error(data, config, "output-dir = ")
    assert f"(it resolves to {elsewhere})" in message and "no target is exported" in message
    assert nothing_in(elsewhere)


def test_allowed_outputs_go_outside(places):
    root, elsewhere = places
    configured(root, global_lines=f'output-dir = "{elsewhere}"\nallow-output-outside-workspace = true\n')
    status, data = check(root)
    assert status == 0 and data["config_diagnostics"] == []
    [target] = data["targets"]
    assert Path(target["onnx"]) == elsewhere / "net.onnx" and (elsewhere / "net.onnx").is_file()
    assert (elsewhere / "reports" / "net.md").is_file()


def test_a_model_reference_outside_the_workspace_says_so(places):
    root, elsewhere = places
    write(elsewhere / "lib.py", (root / "net.py").read_text())
    config = root / "pyproject.toml"
    write(config, CONFIG.replace('"net.py:build"', '"../elsewhere/lib.py:build"'))
    status, data = check(root)
    assert status == 2
    message = the_config_error(data, config, "model = ")
    assert message.startswith(f"`model`: ../elsewhere/lib.py is outside the workspace {root} "
                              f"(it resolves to {elsewhere / 'lib.py'})")
    assert "ModuleNotFoundError" not in message
