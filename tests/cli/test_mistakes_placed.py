"""`onnxlens check` on mistakes that are no line of the model: the real CLI process.

* One import error that stops several targets is one problem in the text and SARIF output,
  naming the targets, on the line that fails (vit-pytorch as a user's clone, torchvision not
  installed: `vit_pytorch/dino.py`'s `from torchvision import transforms as T`, which
  `vit_pytorch/__init__.py` imports; tests/support/repositories.py). The JSON keeps each target's
  own finding, and each target's progress line says what stopped it and where. Ruled out: one
  finding per target, `importing vit_pytorch/vit.py failed: …` and so on, three times.
* A callable the config names and its module does not define (`nets.py:Nett`) is on the
  config's value, with "did you mean `Net`?". Ruled out: on line 1 of nets.py, no suggestion.
* Without an onnxlens adapter for the torch (`ONNXLENS_TORCH_VERSION`: the public path), a
  dynamic-shapes dict missing an input of whisper's TextDecoder is on the spec factory's
  `return`, as with one. Ruled out: on the model factory's `def` line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess

import pytest

from tests.cli.test_check import CLI, TEXT_DIAGNOSTIC
from tests.support.repositories import VIT_TARGETS, broken_import_repository
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


def check(root, *args, env=None):
    return subprocess.run([*CLI, "check", str(root), "--no-cache", "--jobs", "2", *args], cwd=root, capture_output=True,
                          text=True, timeout=900, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    return broken_import_repository(tmp_path_factory.mktemp("vit-clone"))


@pytest.fixture(scope="module")
def text_run(repository):
    return check(repository)


def _import_line(root) -> tuple[str, int]:
    return "vit_pytorch/dino.py", line_of(root / "vit_pytorch" / "dino.py", "from torchvision import transforms as T")


def test_text_shows_the_shared_import_error_once_naming_the_targets(repository, text_run):
    assert text_run.returncode == 1, text_run.stderr
    found = [m.groupdict() for m in map(TEXT_DIAGNOSTIC.match, text_run.stdout.splitlines()) if m]
    imports = [d for d in found if d["code"] == "import" and d["file"].startswith("vit_pytorch/")]
    assert [(d["file"], int(d["line"])) for d in imports] == [_import_line(repository)]
    assert imports[0]["message"] == "[3 targets] import failed: ModuleNotFoundError: No module named 'torchvision'"
    assert f"(the same in 3 targets: {', '.join(VIT_TARGETS)})" in text_run.stdout
    assert re.search(r"^4 targets: 0 exported, 4 failed \(2 errors, 0 warnings\)", text_run.stdout.splitlines()[-1])


def test_each_targets_progress_line_says_what_stopped_it(repository, text_run):
    file, line = _import_line(repository)
    for target in VIT_TARGETS:
        assert (f"onnxlens: {target}: failed: 1 problem — import failed: ModuleNotFoundError: No module named "
                f"'torchvision' (dino.py:{line})") in text_run.stderr


def test_a_misspelt_callable_is_on_the_configs_value_with_the_callable_meant(repository, text_run):
    config = repository / "pyproject.toml"
    line = line_of(config, 'model = "nets.py:Nett"')
    column = config.read_text().splitlines()[line - 1].index('"nets.py:Nett"') + 1
    found = [m.groupdict() for m in map(TEXT_DIAGNOSTIC.match, text_run.stdout.splitlines()) if m]
    [typo] = [d for d in found if d["file"] == "pyproject.toml"]
    assert (int(typo["line"]), int(typo["column"]), typo["code"]) == (line, column, "import")
    assert typo["message"] == "[typo] the model reference 'nets.py:Nett': nets.py has no `Nett`; did you mean `Net`?"


def test_json_keeps_each_targets_own_finding(repository):
    run = check(repository, "--format", "json")
    data = {t["name"]: t for t in json.loads(run.stdout)["targets"]}
    file, line = _import_line(repository)
    for target in VIT_TARGETS:
        [finding] = data[target]["diagnostics"]
        assert (finding["file"], finding["line"], finding["code"]) == (file, line, "import")
    [typo] = data["typo"]["diagnostics"]
    assert (typo["file"], typo["line"]) == ("pyproject.toml", line_of(repository / "pyproject.toml", 'model = "nets.py:Nett"'))


def test_sarif_has_one_result_for_the_shared_import_error(repository):
    run = check(repository, "--format", "sarif")
    results = json.loads(run.stdout)["runs"][0]["results"]
    imports = [r for r in results if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "vit_pytorch/dino.py"]
    assert len(imports) == 1
    assert imports[0]["properties"]["targets"] == list(VIT_TARGETS)
    assert imports[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == _import_line(repository)[1]


SPEECH = '''import torch
from torch.export import Dim
from whisper.model import TextDecoder


def build_decoder():
    return TextDecoder(n_vocab=100, n_ctx=16, n_state=32, n_head=4, n_layer=2).eval()


def decoder_inputs():
    return (torch.randint(0, 100, (1, 8)), torch.randn(1, 10, 32))


def decoder_shapes():
    return {"x": {0: Dim("batch")}}
'''

SPEECH_CONFIG = '''[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "decoder"
model = "speech.py:build_decoder"
inputs = "speech.py:decoder_inputs"
dynamic-shapes = "speech.py:decoder_shapes"
'''


@pytest.mark.skipif(importlib.util.find_spec("whisper") is None, reason="openai-whisper is not installed (the `repos` extra)")
def test_without_an_adapter_a_spec_missing_an_input_is_still_on_its_return(tmp_path):
    write(tmp_path / "speech.py", SPEECH)
    write(tmp_path / "pyproject.toml", SPEECH_CONFIG)
    run = check(tmp_path, "--format", "json", env={"ONNXLENS_TORCH_VERSION": "2.99"})
    [target] = json.loads(run.stdout)["targets"]
    assert any(d["code"] == "torch-version" for d in target["diagnostics"])  # the public path it was
    [error] = [d for d in target["diagnostics"] if d["severity"] == "error"]
    assert (error["file"], error["line"], error["code"]) == (
        "speech.py", line_of(tmp_path / "speech.py", 'return {"x": {0: Dim("batch")}}'), "setup")
    assert "the spec has no entry for `xa`" in error["message"]
