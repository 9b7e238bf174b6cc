"""Inputs and dynamic shapes that do not fit the model land on the `return` of the factory that
built them, naming forward's signature and what it was given (input_mistakes.py;
docs/diagnostics.md "Inputs and dynamic shapes that do not fit the model").

The models are openai-whisper's (the `repos` extra) and transformers' BERT, installed as
packages: whisper's `TextDecoder`
(`forward(self, x: Tensor, xa: Tensor, kv_cache: Optional[dict] = None)`, whisper/model.py) and
`AudioEncoder` (`forward(self, x: Tensor)`, whose first line `x = F.gelu(self.conv1(x))` goes
into whisper's `Conv1d._conv_forward`, which reads `x.dtype`). Read off whisper/model.py by hand.
Before this change each of these was a `torch-export` error at the model factory's `def` line
("no line of your code is on the failing call chain") or, for the str, inside whisper with no
line of the workspace at all.

The negative cases: a model taking a str it uses as a constant still exports, and one that fails
on a data-dependent branch while it is given a str keeps its finding on that branch.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tests.exporter.engine_support import run_target, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (openai-whisper, transformers' BERT)

needs_whisper = pytest.mark.skipif(importlib.util.find_spec("whisper") is None,
                                   reason="openai-whisper is not installed (the `repos` extra: scripts/setup repos)")

MODELS = '''
import numpy as np
import torch
from torch.export import Dim


def build_decoder():
    from whisper.model import TextDecoder

    return TextDecoder(n_vocab=100, n_ctx=16, n_state=32, n_head=4, n_layer=2).eval()


def build_encoder():
    from whisper.model import AudioEncoder

    return AudioEncoder(n_mels=8, n_ctx=16, n_state=32, n_head=4, n_layer=1).eval()


def decoder_inputs():
    tokens = torch.randint(0, 100, (1, 8))
    audio = torch.randn(1, 10, 32)
    return (tokens, audio)


def decoder_shapes_without_audio():
    batch = Dim("batch")
    return {"x": {0: batch}}


def decoder_shapes_one_too_many():
    return ({0: Dim("batch")}, None, None)


def decoder_inputs_misspelt():
    return (torch.randint(0, 100, (1, 8)), torch.randn(1, 10, 32)), {"kv_caches": {}}


def encoder_numpy():
    mel = np.zeros((1, 8, 32), dtype=np.float32)
    return (torch.zeros(0), mel)[1:]


def encoder_mel(kind="numpy"):
    if kind == "torch":
        return (torch.zeros(1, 8, 32),)
    return (np.zeros((1, 8, 32), dtype=np.float32),)


def encoder_path():
    return "speech.wav"


class Scaled(torch.nn.Module):
    def forward(self, x, mode: str):
        return x * 2 if mode == "double" else x


def scaled_inputs():
    return (torch.randn(3), "double")


class Gate(torch.nn.Module):
    def forward(self, x, mode: str):
        if mode == "sum" and x.sum() > 0:
            return x
        return -x


def gate_inputs():
    return (torch.randn(3), "sum")


def build_bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)
    return BertModel(config).eval()


def tokenized():
    from transformers import BatchEncoding

    encoded = BatchEncoding({"input_ids": torch.randint(0, 100, (1, 8)), "attention_mask": torch.ones(1, 8, dtype=torch.long)})
    return (encoded,)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("input-mistakes")
    write(root, "speech.py", MODELS)
    return root


@pytest.fixture(scope="module")
def whisper_model() -> Path:
    return Path(importlib.util.find_spec("whisper.model").origin)


def run(workspace, model, inputs, **options):
    return run_target(workspace, f"speech.py:{model}", f"speech.py:{inputs}", **options)


def only(result):
    errors = [f for f in result.findings if f.severity == "error"]
    assert result.status == "failed" and len(errors) == 1, [(f.code, f.message) for f in result.findings]
    return errors[0]


@needs_whisper
def test_a_dynamic_shapes_dict_missing_an_input_lands_on_the_spec_factorys_return_naming_it(workspace, whisper_model):
    result = run(workspace, "build_decoder", "decoder_inputs", dynamic_shapes="speech.py:decoder_shapes_without_audio")
    finding = only(result)
    models = workspace / "speech.py"
    assert finding.code == "setup"
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, 'return {"x": {0: batch}}'))
    assert "the spec has no entry for `xa`" in finding.message
    assert "TextDecoder.forward(x: Tensor, xa: Tensor, kv_cache: Optional[dict] = None)" in finding.message
    assert "When `dynamic_shapes` is specified as a dict" in finding.message  # torch's own words, quoted
    assert "no line of your code" not in finding.message
    related = {(Path(r.file).name, r.line) for r in finding.related}
    assert ("speech.py", line_of(models, "return (tokens, audio)")) in related
    assert ("model.py", line_of(whisper_model, "def forward(self, x: Tensor, xa: Tensor, kv_cache")) in related


@needs_whisper
def test_a_dynamic_shapes_tuple_of_the_wrong_length_lands_on_its_return(workspace):
    result = run(workspace, "build_decoder", "decoder_inputs", dynamic_shapes="speech.py:decoder_shapes_one_too_many")
    finding = only(result)
    assert finding.code == "setup"
    assert finding.location.line == line_of(workspace / "speech.py", 'return ({0: Dim("batch")}, None, None)')
    assert "the spec has 3 entries for 2 positional inputs" in finding.message


@needs_whisper
def test_a_keyword_forward_does_not_take_lands_on_the_key_with_the_parameter_meant(workspace):
    finding = only(run(workspace, "build_decoder", "decoder_inputs_misspelt"))
    models = workspace / "speech.py"
    line = line_of(models, '{"kv_caches": {}}')
    text = models.read_text().splitlines()[line - 1]
    assert finding.code == "setup"
    assert (finding.location.line, finding.location.column) == (line, text.index('"kv_caches"') + 1)
    assert finding.location.end_column == text.index('"kv_caches"') + len('"kv_caches"') + 1
    assert "takes no argument `kv_caches` (did you mean `kv_cache`?)" in finding.message
    assert "got an unexpected keyword argument 'kv_caches'" in finding.message


@needs_whisper
def test_a_numpy_array_lands_on_its_element_of_the_returned_tuple(workspace):
    finding = only(run(workspace, "build_encoder", "encoder_mel"))
    models = workspace / "speech.py"
    line = line_of(models, "return (np.zeros((1, 8, 32), dtype=np.float32),)")
    text = models.read_text().splitlines()[line - 1]
    assert finding.code == "setup"
    assert (finding.location.line, finding.location.column) == (line, text.index("np.zeros") + 1)
    assert "`x` is a numpy.ndarray (float32 [1, 8, 32])" in finding.message
    assert "torch.from_numpy" in finding.message
    assert "AudioEncoder.forward(x: Tensor)" in finding.message


@needs_whisper
def test_the_return_that_ran_is_blamed_not_the_first_one(workspace):
    finding = only(run(workspace, "build_encoder", "encoder_numpy"))
    models = workspace / "speech.py"
    assert finding.location.line == line_of(models, "return (torch.zeros(0), mel)[1:]")
    # The element cannot be told from `(...)[1:]`: the whole statement.
    assert finding.location.column == models.read_text().splitlines()[finding.location.line - 1].index("return") + 1


@needs_whisper
def test_a_string_forward_computes_with_lands_on_the_return_with_the_library_line_related(workspace, whisper_model):
    finding = only(run(workspace, "build_encoder", "encoder_path"))
    models = workspace / "speech.py"
    assert finding.code == "setup"
    assert finding.location.line == line_of(models, 'return "speech.wav"')
    assert "`x` is a str ('speech.wav'), and forward computes with it as a tensor" in finding.message
    assert "an inputs factory returns a tuple of positional inputs" in finding.message
    related = {(Path(r.file).name, r.line) for r in finding.related}
    # whisper's Conv1d reads x.dtype, and AudioEncoder.forward calls it.
    assert ("model.py", line_of(whisper_model, "x, weight.to(x.dtype), None if bias is None else bias.to(x.dtype)")) in related
    assert ("model.py", line_of(whisper_model, "x = F.gelu(self.conv1(x))")) in related


def test_a_string_the_model_uses_as_a_constant_still_exports(workspace):
    result = run(workspace, "Scaled", "scaled_inputs")
    assert result.status == "ok", [(f.code, f.message) for f in result.findings]


def test_a_failure_that_is_not_the_inputs_keeps_its_line_although_a_string_is_given(workspace):
    finding = only(run(workspace, "Gate", "gate_inputs"))
    assert finding.code == "torch-export"
    assert finding.location.line == line_of(workspace / "speech.py", 'if mode == "sum" and x.sum() > 0:')


def test_a_tokenizers_batch_encoding_given_as_one_input_says_to_give_its_entries_as_keywords(workspace):
    # transformers' BatchEncoding is a UserDict without a pytree registration: torch.export
    # rejects it as an input; its entries are BertModel.forward's keyword inputs.
    finding = only(run(workspace, "build_bert", "tokenized"))
    models = workspace / "speech.py"
    line = line_of(models, "return (encoded,)")
    assert finding.code == "setup"
    assert (finding.location.line, finding.location.column) == (line, models.read_text().splitlines()[line - 1].index("encoded") + 1)
    assert "`input_ids` is a transformers.tokenization_utils_base.BatchEncoding" in finding.message
    assert "return `dict(...)` of it, the keyword inputs, instead" in finding.message
