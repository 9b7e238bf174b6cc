"""Two general rules, each tested on cases of more than one library (no rule shaped like one
fixture).

* **Model code is the code of the model's own modules, wherever installed** (files.py
  `model_code`): the file of the target model's class and of its module tree's classes from the
  same package count as model code even inside torch, not by a path of torch's (ExportDB's
  examples are one case of many). Cases: torch's own modules exported as the model, found by hand in
  torch 2.13's source — `nn.AdaptiveLogSoftmaxWithLoss` fails capture on a data-dependent
  branch, torch/nn/modules/adaptive.py `if row_indices.numel() == 0:`;
  `nn.FractionalMaxPool2d` calls `F.fractional_max_pool2d` (torch/nn/modules/pooling.py), whose
  op has no ONNX translation. Taken as torch's internals, those lines would leave the finding
  with no related location at all.
* **An unflattenable output is traced to the code that made it, the fixes found in the code**
  (returns.py, output_fixes.py): the `if` around the construction or the `return` names the
  switch, and the inputs' line that passes it is related, whatever the switch is called (not a
  search for `use_cache` in the inputs factory's text). Cases (read by hand): x-transformers' `TransformerWrapper` called
  with `return_intermediates=True` returns its `LayerIntermediates` dataclass under `if
  return_intermediates:` (x_transformers.py, `return out, intermediates`); transformers' Llama
  builds its `DynamicCache` under `if use_cache and past_key_values is None:`
  (modeling_llama.py), `use_cache` defaulting to the config's: each finding names its switch
  and the inputs' line.
"""

from __future__ import annotations

import os

import pytest
from torch import nn

from tests.exporter.engine_support import run_target, write
from tests.realworld.harness import library_file, line_in
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (transformers, x-transformers)

MODELS = '''
import torch
from torch import nn


def adaptive():
    torch.manual_seed(0)
    return nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4]).eval()


def adaptive_inputs():
    return (torch.randn(4, 8), torch.tensor([1, 5, 9, 2]))


def fractional():
    return nn.FractionalMaxPool2d(2, output_size=(3, 3))


def image():
    return (torch.randn(1, 2, 8, 8),)
'''

INTERMEDIATES = '''
import torch
from x_transformers import Decoder, TransformerWrapper


def build_model():
    torch.manual_seed(0)
    return TransformerWrapper(num_tokens=256, max_seq_len=128,
                              attn_layers=Decoder(dim=32, depth=1, heads=2)).eval()


def example_inputs():
    return (torch.randint(0, 256, (2, 12)),), {
        "return_intermediates": True,
    }
'''

LLAMA = '''
import torch
from transformers import LlamaConfig, LlamaForCausalLM


def build_model():
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=100, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64)
    return LlamaForCausalLM(config).eval()


def example_inputs():
    return (torch.randint(3, 100, (1, 8)),)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("model-code")
    write(root, "torch_modules.py", MODELS)
    write(root, "xt_intermediates.py", INTERMEDIATES)
    write(root, "llama_defaults.py", LLAMA)
    return root


def test_a_torch_module_exported_as_the_model_shows_its_data_dependent_line(workspace):
    result = run_target(workspace, "torch_modules.py:adaptive", "torch_modules.py:adaptive_inputs")
    # Stock's failure; the line behind it is test_past_first_failure.py's.
    finding, *behind = result.findings
    assert all(f.message.startswith("found past the first failure") for f in behind)
    adaptive = library_file("torch.nn.modules.adaptive")
    models = workspace / "torch_modules.py"
    assert finding.code == "torch-export"
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "def adaptive"))
    assert (str(adaptive), line_in(adaptive, "if row_indices.numel() == 0:")) in [
        (r.file, r.line) for r in finding.related]


def test_a_torch_module_exported_as_the_model_shows_the_call_of_the_op_without_translation(workspace):
    result = run_target(workspace, "torch_modules.py:fractional", "torch_modules.py:image")
    [finding] = result.findings
    pooling = library_file("torch.nn.modules.pooling")
    assert finding.code == "unsupported-op"
    assert [(r.file, r.line) for r in finding.related] == [
        (str(pooling), line_in(pooling, "return F.fractional_max_pool2d(", after="class FractionalMaxPool2d("))]
    assert "torch/nn/modules/pooling.py:" in finding.message


class UsersModel(nn.Module):
    """A model of the user's: the torch modules it uses are torch's."""


def test_model_code_is_the_models_class_and_its_packages_classes_not_the_torch_modules_it_uses():
    from onnxlens.exporter.locations import model_code

    assert model_code([UsersModel, nn.Linear, nn.ReLU]) == {os.path.realpath(__file__)}
    torchs = model_code([nn.AdaptiveLogSoftmaxWithLoss, nn.Linear, nn.ModuleList])
    assert str(library_file("torch.nn.modules.adaptive")) in torchs
    assert str(library_file("torch.nn.modules.linear")) in torchs  # the model is torch's own code: its package
    assert model_code([]) == frozenset()


def test_an_unflattenable_dataclass_names_the_switch_that_returns_it_and_the_inputs_line(workspace):
    result = run_target(workspace, "xt_intermediates.py:build_model", "xt_intermediates.py:example_inputs")
    [finding] = result.findings
    x_transformers = library_file("x_transformers.x_transformers")
    inputs = workspace / "xt_intermediates.py"
    returned = line_in(x_transformers, "return out, intermediates", after="class TransformerWrapper(")
    assert "it is only made or returned when `return_intermediates` is true (`if return_intermediates:`" in finding.message
    assert "your inputs pass return_intermediates=True: pass return_intermediates=False" in finding.message
    assert "`torch.export.register_dataclass(LayerIntermediates)`" in finding.message
    related = [(r.file, r.line, r.message) for r in finding.related]
    assert (str(x_transformers), returned) in [(file, line) for file, line, _ in related]
    assert (str(inputs), line_of(inputs, '"return_intermediates": True'),
            "the inputs pass return_intermediates=True here") in related


def test_a_cache_built_by_the_configs_default_names_the_condition_and_the_configs_attribute(workspace):
    result = run_target(workspace, "llama_defaults.py:build_model", "llama_defaults.py:example_inputs")
    [finding] = result.findings
    llama = library_file("transformers.models.llama.modeling_llama")
    condition = line_in(llama, "if use_cache and past_key_values is None:", after="class LlamaModel(")
    assert (f"it is only made or returned when `use_cache` is true (`if use_cache and past_key_values is None:`, "
            f"transformers/models/llama/modeling_llama.py:{condition}): pass use_cache=False in the inputs, "
            "or set model.config.use_cache = False in the model factory") in finding.message
    built = line_in(llama, "past_key_values = DynamicCache(config=self.config)", after="class LlamaModel(")
    assert (str(llama), built) in [(r.file, r.line) for r in finding.related]
    # torch's own refusal, with the exception its summary names: stock's answer, then ours.
    assert "torch.export non-strict: RuntimeError: Found <class 'transformers.cache_utils.DynamicCache'> in output" \
        in finding.message


def test_a_file_of_the_models_own_code_is_library_code_though_torch_ships_it(tmp_path):
    from onnxlens.exporter.locations import Origin, Workspace, classify
    from onnxlens.exporter.locations.files import is_tracing_machinery

    example = str(library_file("torch._export.db.examples.dynamic_shape_round"))
    linear = str(library_file("torch.nn.modules.linear"))
    plain = Workspace(str(tmp_path))
    assert classify(example, plain) is Origin.INTERNAL and is_tracing_machinery(example, plain)
    exporting_it = Workspace(str(tmp_path), model_files=[example])
    assert classify(example, exporting_it) is Origin.LIBRARY and not is_tracing_machinery(example, exporting_it)
    assert classify(linear, exporting_it) is Origin.INTERNAL
