"""A wrong op told apart from drift through the language server, with VS Code's
and Neovim's recorded capabilities. One workspace, two targets whose verification fails for
opposite reasons:

* `tagger`: the BERT tagger (transformers' BertModel, random init; tests/support/tagger.py) with
  a custom translation of `aten.gelu.default` registered through the config's
  `custom-translations`: GELU by its tanh approximation, what torch computes only with
  `approximate="tanh"`. BERT's GELU is the exact one (erf), so the translation is wrong by up to
  ~5e-4, past the tolerance where GELU's inputs reach ±2 (initializer_range 0.2 gives them
  that). Its inputs are computed alike (a Linear): the op is to blame.
* `deep`: 48 layers of torch's nn.Linear and nn.Tanh, weights of gain 2.5: the chaotic regime
  of deep tanh networks, where a difference of one float rounding (onnxruntime's Tanh and
  torch's round differently in the last bit) grows layer after layer until, deep in the
  stack, it is past the tolerance (its noise floor included: exporter/verify/tolerance.py). Every op there computes what torch computes: drift.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.lsp import EDITORS, Client
from tests.support.tagger import tagger
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

PYPROJECT = '''[project]
name = "verdicts"
version = "0"

[tool.onnxlens]
verify = true

[[tool.onnxlens.target]]
name = "tagger"
model = "models/tagger.py:build"
inputs = "models/tagger.py:example_inputs"
custom-translations = "models/translations.py:TABLE"

[[tool.onnxlens.target]]
name = "deep"
model = "models/deep.py:build"
inputs = "models/deep.py:example_inputs"
'''

TRANSLATIONS = '''import math

import torch
from onnxscript import opset18 as op


def tanh_gelu(x, approximate: str = "none"):
    inner = op.Mul(op.Add(x, op.Mul(op.Constant(value_float=0.044715), op.Mul(x, op.Mul(x, x)))),
                   op.Constant(value_float=math.sqrt(2 / math.pi)))
    return op.Mul(op.Mul(x, op.Constant(value_float=0.5)), op.Add(op.Tanh(inner), op.Constant(value_float=1.0)))


TABLE = {torch.ops.aten.gelu.default: tanh_gelu}
'''

DEEP = '''import torch
from torch import nn


class Deep(nn.Module):
    def __init__(self, depth: int = 48, width: int = 64, gain: float = 2.5) -> None:
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        for layer in self.layers:
            nn.init.normal_(layer.weight, std=gain / width ** 0.5)
        self.act = nn.Tanh()

    def forward(self, x):
        for layer in self.layers:
            x = self.act(layer(x))
        return x


def build():
    torch.manual_seed(0)
    return Deep().eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randn(4, 64),)
'''

BERT = ("BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,\n"
        "                            intermediate_size=128, max_position_embeddings=64, initializer_range=0.2)")


def _section(report: Path) -> str:
    text = report.read_text() if report.is_file() else ""
    return text.split("## First mismatch: this op or drift", 1)[1].split("\n## ", 1)[0] if (
        "## First mismatch: this op or drift" in text) else ""


@pytest.mark.asyncio
@pytest.mark.parametrize("editor", EDITORS)
async def test_a_wrong_translation_is_this_op_and_deep_float_drift_is_drift(tmp_path, editor):
    write(tmp_path / "pyproject.toml", PYPROJECT)
    root = tmp_path.resolve() / "models"
    write(root / "tagger.py", tagger(bert=BERT, hidden=64))
    write(root / "translations.py", TRANSLATIONS)
    write(root / "deep.py", DEEP)
    client = await Client.launch(tmp_path, editor=editor, settings={"debounceMs": 100})
    try:
        client.open(root / "tagger.py")
        client.open(root / "deep.py")
        await client.exports_finished("tagger", 1)
        await client.exports_finished("deep", 1)

        # The wrong translation: on its def line (the user's code that is wrong), called this op.
        translations = root / "translations.py"
        wrong = await client.wait_diagnostic(translations, "mismatch", line_of(translations, "def tanh_gelu"))
        assert "your ONNX translation of aten.gelu.default (`tanh_gelu`)" in wrong.message
        assert "this op's translation differs from torch" in wrong.message, wrong.message
        assert "drift" not in wrong.message

        # The deep stack: on the layer's line, called drift, its inputs' difference given.
        deep = root / "deep.py"
        drift = await client.wait_diagnostic(deep, "mismatch", line_of(deep, "x = self.act(layer(x))"))
        assert "drift, not this op" in drift.message and "inputs already differ by up to" in drift.message, drift.message
        assert "this op's translation differs" not in drift.message
        # The first value past tolerance is a layer's Linear or its Tanh (`linear_N`, `tanh_N`: layer N+1).
        first = re.search(r"FX node `(?:linear|tanh)(?:_(\d+))?`", drift.message)
        assert first and int(first.group(1) or 0) >= 8, drift.message  # deep in the stack: the difference grew there

        # The numbers in the reports (written after the result).
        reports = tmp_path / ".onnxlens" / "reports"
        tagger_numbers = await client.wait_for(lambda: _section(reports / "tagger.md"), "the tagger's verdict")
        assert "**this op's translation differs from torch**" in tagger_numbers
        assert "`Tanh`" in tagger_numbers and "past the verification's tolerance" in tagger_numbers
        deep_numbers = await client.wait_for(lambda: _section(reports / "deep.md"), "the deep model's verdict")
        assert "**drift, not this op" in deep_numbers and "within the verification's tolerance" in deep_numbers
        drifted = [row for row in deep_numbers.splitlines() if row.startswith("| `")]  # its inputs' rows
        assert drifted and all(float(row.split("|")[2]) > 0 for row in drifted), deep_numbers
    finally:
        await client.close()
