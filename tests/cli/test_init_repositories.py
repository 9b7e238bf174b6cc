"""`onnxlens init` then `onnxlens check`, real processes, on real repositories' code installed as
packages (the `repos` extra) and copied into a temporary workspace: what init wrote exports with
no hand edit, and where init cannot know a value the export says which, on the factory's line.
What is expected was read off the packages' sources by hand (tests/targets/test_repositories.py
says what and why; the workspace is the package directory for segment-anything and vit-pytorch,
whose top-level `__init__` imports torchvision).

* segment-anything: the prompt encoder is built as build_sam.py builds it and called with the
  `None` prompts its Optional parameters take: it exports;
* vit-pytorch: jumbo_vit.py's and vivit.py's models are built and called as their `__main__`
  blocks do: they export;
* whisper: `Whisper(dims: ModelDimensions)`, whose ten sizes no file gives: the export fails with
  a `setup` error on the factory's `raise` line naming them.
"""

from __future__ import annotations

import json
import tomllib

import pytest

from tests.cli.test_init import run
from tests.support.workspace import line_of
from tests.support.repositories import package_copy
from tests.targets.test_repositories import WHISPER_DIMENSIONS

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


def _targets(root) -> dict[str, str]:
    """Target name -> its model reference, from the config init wrote."""
    return {t["name"]: t["model"] for t in tomllib.loads((root / "pyproject.toml").read_text())["tool"]["onnxlens"]["target"]}


def _check(root, *names: str) -> dict[str, dict]:
    process = run("check", str(root), "--format", "json", "--jobs", "2", *(f"--target={n}" for n in names), cwd=root)
    data = json.loads(process.stdout)
    return {t["name"]: t for t in data["targets"]}


def test_segment_anything_prompt_encoder_exports_as_build_sam_builds_it(tmp_path):
    root = package_copy("segment_anything", tmp_path / "segment_anything")
    init = run("init", cwd=root)
    assert init.returncode == 0, init.stderr
    targets = _targets(root)
    assert set(targets) == {"imageencodervit", "maskdecoder", "promptencoder", "sam", "twowaytransformer",
                            "samonnxmodel"}
    assert targets["promptencoder"] == "modeling/prompt_encoder.py:build_promptencoder"
    result = _check(root, "promptencoder")["promptencoder"]
    assert result["status"] == "ok", result["diagnostics"]
    assert (root / ".onnxlens" / "promptencoder.onnx").is_file()


def test_vit_pytorch_models_export_as_their_main_blocks_build_and_call_them(tmp_path):
    root = package_copy("vit_pytorch", tmp_path / "vit_pytorch")
    assert run("init", cwd=root).returncode == 0
    targets = _targets(root)
    chosen = {name: model for name, model in targets.items() if model.split(":")[0] in ("jumbo_vit.py", "vivit.py")}
    assert sorted(m.split(":")[0] for m in chosen.values()) == ["jumbo_vit.py", "vivit.py"]
    for model in chosen.values():
        text = (root / model.split(":")[0]).read_text()
        assert "built as " in text and "calls it" in text  # the recipe and the inputs of the __main__ block
    results = _check(root, *chosen)
    for name in chosen:
        assert results[name]["status"] == "ok", results[name]["diagnostics"]
        assert not [d for d in results[name]["diagnostics"] if d["severity"] == "warning"]  # eval mode: no dropout noise


def test_whisper_says_which_sizes_to_give_on_the_factorys_raise_line(tmp_path):
    root = tmp_path / "repo"
    package_copy("whisper", root / "whisper")
    assert run("init", cwd=root).returncode == 0
    assert _targets(root) == {"whisper": "whisper/model.py:build_whisper"}
    result = _check(root, "whisper")["whisper"]
    assert result["status"] != "ok"
    [finding] = [d for d in result["diagnostics"] if d["code"] == "setup"]
    model = root / "whisper" / "model.py"
    assert finding["file"].endswith("whisper/model.py")
    assert finding["line"] == line_of(model, "    raise NotImplementedError(\"build_whisper")
    for name in WHISPER_DIMENSIONS:
        assert f"ModelDimensions.{name} (int)" in finding["message"]
