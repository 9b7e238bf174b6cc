"""Custom translations, translation and checker failures, and in-process reuse without leaks."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

OPS = '''
import torch


# A custom operator: torch.export keeps it as one node, ONNX knows nothing about it.
@torch.library.custom_op("onnxlens_tests::scaled_tanh", mutates_args=())
def scaled_tanh(x: torch.Tensor) -> torch.Tensor:
    return torch.tanh(x) * 2


@scaled_tanh.register_fake
def _(x):
    return torch.empty_like(x)
'''

MODEL = '''
import torch
from torch import nn

import ops


class UsesCustomOp(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        h = self.proj(x)
        return torch.ops.onnxlens_tests.scaled_tanh(h) + 1


def inputs():
    torch.manual_seed(0)
    return (torch.randn(2, 4),)
'''

TRANSLATIONS = '''
import torch
from onnxscript import opset18 as op
from onnxscript import opset20 as op20


def scaled_tanh(x):
    return op.Mul(op.Tanh(x), op.CastLike(2.0, x))


def broken(x):
    raise ValueError("this translation is unfinished")


def newer_than_target(x):
    # Gelu exists from opset 20 on: in a model built for opset 18, onnx.checker rejects it.
    return op20.Gelu(x)


GOOD = {torch.ops.onnxlens_tests.scaled_tanh.default: scaled_tanh}
PACKET = {torch.ops.onnxlens_tests.scaled_tanh: scaled_tanh}
BROKEN = {torch.ops.onnxlens_tests.scaled_tanh.default: broken}
NEWER = {torch.ops.onnxlens_tests.scaled_tanh.default: newer_than_target}
NOT_A_DICT = [scaled_tanh]
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("custom")
    write(root, "ops.py", OPS)
    write(root, "model.py", MODEL)
    write(root, "translations.py", TRANSLATIONS)
    return root


def run(workspace: Path, table: str | None, name: str = "custom", **options):
    spec = spec_for(workspace, name, "model.py:UsesCustomOp", "model.py:inputs",
                    custom_translations=f"translations.py:{table}" if table else None, **options)
    return shared_pipeline().run(spec)


@pytest.fixture(scope="module")
def exported(workspace):
    return run(workspace, "GOOD", name="good")


def test_custom_op_without_translation_is_an_unsupported_op_on_its_line(workspace):
    result = run(workspace, None, name="plain")
    model = workspace / "model.py"
    assert [f.code for f in result.findings] == ["unsupported-op"]
    finding = result.findings[0]
    assert finding.location.line == line_of(model, "scaled_tanh(h)")
    assert "onnxlens_tests.scaled_tanh" in finding.message


def test_custom_translation_makes_the_custom_op_export(exported):
    assert exported.status == "ok", exported.findings
    model = onnx.load(exported.onnx, load_external_data=False)
    assert "Tanh" in [node.op_type for node in model.graph.node]


def test_custom_translation_given_as_an_overload_packet_works_too(workspace):
    assert run(workspace, "PACKET", name="packet").status == "ok"


def test_registrations_do_not_leak_into_the_next_job(exported, workspace):
    # Same Pipeline object, same process: the previous job registered a translation.
    assert exported.status == "ok"
    again = run(workspace, None, name="after")
    assert [f.code for f in again.findings] == ["unsupported-op"]


def test_translation_that_raises_is_a_translation_finding_on_the_ops_line(workspace):
    result = run(workspace, "BROKEN", name="broken")
    model = workspace / "model.py"
    assert [f.code for f in result.findings] == ["translation"]
    finding = result.findings[0]
    assert finding.stage == "translate"
    assert finding.location.line == line_of(model, "scaled_tanh(h)")
    assert "this translation is unfinished" in finding.message
    # The user's translation function raised: that line is on the chain too.
    translations = workspace / "translations.py"
    assert (str(translations), line_of(translations, 'raise ValueError("this translation')) in [
        (r.file, r.line) for r in finding.related]


def test_checker_rejection_is_an_onnx_checker_finding_on_the_ops_line(workspace):
    result = run(workspace, "NEWER", name="newer", opset=18)
    model = workspace / "model.py"
    assert [f.code for f in result.findings] == ["onnx-checker"]
    finding = result.findings[0]
    assert finding.stage == "check"
    assert finding.location.line == line_of(model, "scaled_tanh(h)")
    assert "Gelu" in finding.message
    assert result.onnx is None


def test_a_table_that_is_not_a_dict_is_a_setup_finding(workspace):
    result = run(workspace, "NOT_A_DICT", name="notadict")
    assert [f.code for f in result.findings] == ["setup"]
    assert "must be a dict" in result.findings[0].message
    assert result.findings[0].location.file == str(workspace / "translations.py")
