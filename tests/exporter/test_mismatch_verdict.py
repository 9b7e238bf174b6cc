"""The other two verdicts of exporter/verify/verdict.py on real exports (the op and drift are in
tests/lsp/test_mismatch_verdict.py and test_verify.py), and what the finding and report say.

* float rounding: onnxruntime's Tanh and torch's round differently in the last bits (their own
  implementations), which a tolerance of 1e-9 catches at the first Tanh; its input (a Linear,
  computed alike) is exact, and against tanh in float64 onnxruntime's result is within a few
  float32 epsilons, as torch's is: not a wrong op.
* the whole model computes otherwise: transformers' BertModel in float16 (random init). Its
  embeddings add three lookups; onnxruntime's CPU has no float16 Add and computes the chain in
  float32 with casts at its ends (its graph optimizations drop the casts between the two Adds),
  so the second Add sees the first's sum unrounded where torch rounds it to float16. The value
  the whole model gives for the first sum (cast back to float16 as an extra output) is torch's
  exactly, and the second Add alone on torch's inputs is torch's exactly: no op is wrong, no
  input drifted; onnxruntime computes it otherwise inside the model.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn

from onnxlens.exporter.report.verdict_section import verdict_section
from onnxlens.exporter.verify import verify


def _export(model: nn.Module, args: tuple):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, args, dynamo=True, verbose=False)


def test_a_difference_of_float_rounding_past_a_tight_tolerance_is_rounding_not_a_wrong_op():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh()).eval()
    args = (torch.randn(4, 64) * 3,)
    program = _export(model, args)

    summary, (finding,) = verify(program.exported_program, program, args, {}, rtol=0, atol=1e-9)

    first = summary.first_mismatch
    assert (first.target, first.onnx_op) == ("aten.tanh.default", "Tanh")
    verdict = first.verdict
    assert verdict.kind == "rounding" and verdict.onnx_nodes == ["Tanh"], verdict
    assert not verdict.alone_passed and verdict.inputs_max_abs_diff == 0
    assert verdict.onnx_float64_diff < 10 * torch.finfo(torch.float32).eps  # |tanh| < 1: a few epsilons
    assert "float rounding, not a wrong op" in finding.message
    assert "this op's translation differs" not in finding.message


def test_a_float16_bert_whose_embeddings_onnxruntime_adds_in_float32_is_neither_the_op_nor_drift():
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64)
    model = BertModel(config).eval().half()
    args = (torch.randint(0, 500, (2, 16)),)
    program = _export(model, args)

    summary, (finding,) = verify(program.exported_program, program, args, {})

    first = summary.first_mismatch
    assert (first.module, first.target) == ("embeddings", "aten.add.Tensor")
    verdict = first.verdict
    assert verdict.kind == "context", verdict
    assert verdict.alone_passed and verdict.alone_max_abs_diff == 0
    assert verdict.inputs and verdict.inputs_max_abs_diff == 0
    assert "onnxruntime computes it otherwise inside the whole model" in finding.message
    section = verdict_section(summary)
    assert "**the op agrees alone; onnxruntime computes it otherwise inside the whole model**" in section
    assert f"| `{verdict.inputs[0].name}` | 0 | 0 |" in section
