"""The edits of server/fixits/new_targets.py, applied as an editor or `onnxlens init` applies them
(server/fixits/edits.py apply_insertions): the config extended byte for byte, onnxlens.toml preferred,
names kept unique, example inputs per parameter kind, and refusals with a reason."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from onnxlens.server.fixits.edits import apply_insertions
from onnxlens.server.fixits.candidates import find_candidates
from onnxlens.server.fixits.new_targets import Choice, NewTargetsError, configured_models, is_configured, plan_targets
from tests.support.workspace import write

TOKENS = '''from __future__ import annotations

from torch import nn


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(77, 8)

    def forward(self, input_ids, attention_mask, lengths: int):
        return self.embed(input_ids)
'''


def _apply(fix) -> dict[str, str]:
    texts = {}
    for file in dict.fromkeys(i.file for i in fix.insertions):
        path = Path(file)
        original = open(path, encoding="utf-8", newline="").read() if path.exists() else ""
        texts[path.name] = apply_insertions(original, [i for i in fix.insertions if i.file == file])
    return texts


def _plan(root: Path, file: str):
    path = root / file
    return plan_targets(root, [Choice(path, c) for c in find_candidates(path.read_text())])


def test_example_inputs_by_parameter_kind_and_import_after_future(tmp_path):
    write(tmp_path / "tagger.py", TOKENS)
    fix = _plan(tmp_path, "tagger.py")
    texts = _apply(fix)
    source = texts["tagger.py"]
    assert source.startswith("from __future__ import annotations\n\nimport torch\nfrom torch import nn\n")
    assert "input_ids = torch.randint(0, 77, (2, 16))" in source
    assert "attention_mask = torch.ones(2, 16, dtype=torch.long)" in source
    assert "lengths = 1  # TODO" in source
    assert "return (input_ids, attention_mask, lengths)" in source
    compile(source, "tagger.py", "exec")  # the file still parses
    assert fix.targets[0].line == source.splitlines().index("def example_inputs_tagger():") + 1
    assert tomllib.loads(texts["pyproject.toml"])["tool"]["onnxlens"]["target"][0]["name"] == "tagger"


def test_onnxlens_toml_is_used_and_names_stay_unique(tmp_path):
    write(tmp_path / "tagger.py", TOKENS)
    toml = '# mine\n[[target]]\nname = "tagger"\nmodel = "other.py:Other"\ninputs = "other.py:inputs"'  # no final newline
    write(tmp_path / "onnxlens.toml", toml)
    fix = _plan(tmp_path, "tagger.py")
    assert fix.config_file == tmp_path.resolve() / "onnxlens.toml"
    after = _apply(fix)["onnxlens.toml"]
    assert after.startswith(toml + "\n")
    assert [t["name"] for t in tomllib.loads(after)["target"]] == ["tagger", "tagger-2"]


def test_crlf_pyproject_keeps_its_bytes(tmp_path):
    write(tmp_path / "tagger.py", TOKENS)
    project = '[project]\r\nname = "x"\r\n\r\n[tool.onnxlens]\r\nverify = false\r\n'
    write(tmp_path / "pyproject.toml", project)
    after = _apply(_plan(tmp_path, "tagger.py"))["pyproject.toml"]
    assert after.startswith(project) and after.count("[tool.onnxlens]") == 1
    assert tomllib.loads(after)["tool"]["onnxlens"]["verify"] is False


@pytest.mark.parametrize("config", [
    '[tool]\nonnxlens = { verify = true }\n',  # inline: [[tool.onnxlens.target]] cannot extend it
    '[tool.onnxlens]\ntarget = [{ model = "a.py:A", inputs = "a.py:i" }]\n',
    '[tool.onnxlens\n',  # broken
])
def test_configs_that_cannot_be_extended_are_refused_with_a_reason(tmp_path, config):
    write(tmp_path / "tagger.py", TOKENS)
    write(tmp_path / "pyproject.toml", config)
    with pytest.raises(NewTargetsError, match="TOML|by hand"):
        _plan(tmp_path, "tagger.py")


def test_a_model_outside_the_root_and_a_file_that_does_not_parse_are_refused(tmp_path):
    write(tmp_path / "outside" / "tagger.py", TOKENS)
    [candidate] = find_candidates(TOKENS)
    with pytest.raises(NewTargetsError, match="outside the workspace"):
        plan_targets(tmp_path / "ws", [Choice(tmp_path / "outside" / "tagger.py", candidate)])
    write(tmp_path / "ws" / "tagger.py", TOKENS + "def broken(:\n")
    with pytest.raises(NewTargetsError, match="does not parse"):
        plan_targets(tmp_path / "ws", [Choice(tmp_path / "ws" / "tagger.py", candidate)])


def test_configured_models_resolve_spellings_and_factories(tmp_path):
    text = TOKENS + "\n\ndef build():\n    return Tagger()\n"
    write(tmp_path / "models" / "tagger.py", text)
    write(tmp_path / "pyproject.toml", '[tool.onnxlens]\n[[tool.onnxlens.target]]\nmodel = "models/./tagger.py:build"\n'
                                       'inputs = "models/tagger.py:x"\n')
    configured = configured_models(tmp_path / "pyproject.toml")
    candidates = find_candidates(text)
    tagger, build = candidates
    assert is_configured(tmp_path / "models" / "tagger.py", build, candidates, configured)
    assert is_configured(tmp_path / "models" / "tagger.py", tagger, candidates, configured)  # through build()
    assert configured_models(tmp_path / "missing.toml") == set()
