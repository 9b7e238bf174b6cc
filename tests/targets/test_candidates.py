"""The candidate finder (server/fixits/candidates.py) on source nobody here wrote, read without
importing it: transformers' BERT, kornia's Sobel filters, diffusers' ResNet blocks. The expected
classes, lines and parameters were read off those files by hand; what must not be found (output
dataclasses, abstract bases without forward, tensor functions) is named too. Then the rules on
small files of our own: import spellings, same-file subclasses, factories."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from onnxlens.server.fixits.candidates import Layer, Parameter, find_candidates, imports_torch


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)  # locates the file; nothing is imported
    if spec is None or spec.origin is None:
        pytest.skip(f"{module} is not installed")
    return Path(spec.origin).read_text(encoding="utf-8")


def _line(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if line.startswith(needle))


def test_transformers_bert():
    text = _source("transformers.models.bert.modeling_bert")
    found = {c.name: c for c in find_candidates(text)}

    attention = found["BertSelfAttention"]  # class BertSelfAttention(nn.Module)
    assert attention.kind == "class" and attention.line == _line(text, "class BertSelfAttention(")
    assert attention.forward == (Parameter("hidden_states", "torch.Tensor", False),
                                 Parameter("attention_mask", "torch.Tensor | None", True),
                                 Parameter("past_key_values", "Cache | None", True))  # **kwargs left out
    assert attention.needs_arguments and attention.required_arguments == ("config",)

    # BertModel(BertPreTrainedModel), BertPreTrainedModel(PreTrainedModel): a library base with a
    # forward of its own; decorated (@auto_docstring), found on its `class` line.
    model = found["BertModel"]
    assert model.line == _line(text, "class BertModel(")
    assert [p.name for p in model.forward][:3] == ["input_ids", "attention_mask", "token_type_ids"]
    assert all(p.has_default for p in model.forward) and model.required_arguments == ("config",)
    assert "BertLayer" in found  # BertLayer(GradientCheckpointingLayer)
    assert {"BertEmbeddings", "BertForMaskedLM", "BertForQuestionAnswering"} <= set(found)

    # Not modules: the output dataclass, the base without forward, plain functions.
    assert not {"BertForPreTrainingOutput", "BertPreTrainedModel", "eager_attention_forward"} & set(found)
    assert all(c.kind == "class" for c in found.values())  # no factory in this file


def test_kornia_sobel():
    text = _source("kornia.filters.sobel")
    found = {c.name: c for c in find_candidates(text)}
    assert set(found) == {"SpatialGradient", "SpatialGradient3d", "Sobel"}
    sobel = found["Sobel"]
    assert sobel.line == _line(text, "class Sobel(") and not sobel.needs_arguments  # (normalized=True, eps=1e-6)
    assert sobel.forward == (Parameter("input", "torch.Tensor", False),)
    # spatial_gradient(input, ...) -> torch.Tensor and sobel(...) are functions on tensors, no factories.


def test_diffusers_resnet_blocks():
    text = _source("diffusers.models.resnet")
    found = {c.name: c for c in find_candidates(text)}
    assert {"ResnetBlock2D", "Conv1dBlock", "TemporalConvLayer", "AlphaBlender"} <= set(found)
    assert "rearrange_dims" not in found
    conv = found["Conv1dBlock"]
    assert conv.required_arguments == ("inp_channels", "out_channels", "kernel_size")
    assert conv.forward == (Parameter("inputs", "torch.Tensor", False),)


MODELS = '''"""Models."""
import torch.nn as nn
from torch.nn import Module as Base
import dataclasses


class Stem(Base):
    def __init__(self, channels=3):
        super().__init__()
        self.conv = nn.Conv2d(in_channels=channels, out_channels=8, kernel_size=3)
        self.embed = nn.Embedding(300, 8)

    def forward(self, image, *, scale, bias=0.0):
        return self.conv(image)


class Deeper(Stem):
    pass


class Head(nn.Sequential):
    def __init__(self, classes):
        super().__init__(nn.Linear(16, classes))


@dataclasses.dataclass
class Output:
    logits: object


class Parameterish(nn.Parameter):
    pass


def build() -> nn.Module:
    return Deeper().eval()


def make_head(classes=4):
    return Head(classes)


def helper():
    return Output(None)
'''


def test_spellings_subclasses_and_factories():
    found = {c.name: c for c in find_candidates(MODELS)}
    assert list(found) == ["Stem", "Deeper", "Head", "build", "make_head"]
    stem = found["Stem"]
    assert stem.forward == (Parameter("image", None, False), Parameter("scale", None, False, keyword_only=True),
                            Parameter("bias", None, True, keyword_only=True))
    assert stem.first_layer is None  # Conv2d(in_channels=channels): no literal size
    assert stem.vocabulary == 300
    deeper = found["Deeper"]  # inherits forward and __init__ within the file
    assert deeper.forward == stem.forward and not deeper.needs_arguments
    head = found["Head"]
    assert head.needs_arguments and head.required_arguments == ("classes",) and head.forward is None
    assert head.first_layer == Layer("Linear", 16)
    assert found["build"].kind == "factory" and found["build"].model_class == "Deeper"
    assert found["build"].forward == stem.forward and not found["build"].needs_arguments
    assert found["make_head"].model_class == "Head"


def test_files_that_do_not_parse_or_do_not_use_torch():
    assert find_candidates("class Net(nn.Module:\n") == []
    assert find_candidates("class Net(nn.Module):\n    def forward(self, x):\n        return x\n") == []  # nn unbound
    assert imports_torch("import torch.nn as nn\n") and imports_torch("from torch import nn\n")
    assert not imports_torch("import torchvision_like\n") and not imports_torch("def f(:\n")
