"""The other two verdicts of exporter/verify/verdict.py on real exports (the op and drift are in
tests/lsp/test_mismatch_verdict.py and test_verify.py), and what the finding and report say.

* float rounding: a correct model whose sum cancels (each row of 4096 values of magnitude ~1e3
  minus its mean, summed: the result is near 0, its rounding that of the terms). onnxruntime's
  ReduceSum and torch's sum add in other orders: they differ far past the tolerance at the
  result's own scale (its noise floor is at the result's magnitude, not the terms'), and against
  the sum in float64 onnxruntime's result is within a few times torch's own error: not a wrong op.
* the whole model computes otherwise: transformers' BertModel in float16 (random init). Its
  embeddings add three lookups; onnxruntime's CPU has no float16 Add and computes the chain in
  float32 with casts at its ends (its graph optimizations drop the casts between the two Adds),
  so the second Add sees the first's sum unrounded where torch rounds it to float16. That is a
  float16 unit at most: within float16's noise floor (exporter/verify/tolerance.py), so the
  verification passes; judged alone (verdict.judge, as verification judges a first mismatch),
  the second Add on torch's inputs is torch's exactly and the whole model's value of its input
  too: no op is wrong, no input drifted; onnxruntime computes it otherwise inside the model.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

from onnxlens.exporter.report.verdict_section import verdict_section
from onnxlens.exporter.verify import verify

pytestmark = pytest.mark.slow  # library models (transformers)


def _export(model: nn.Module, args: tuple):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, args, dynamo=True, verbose=False)


class CancellingSum(nn.Module):
    def forward(self, x):
        return (x - x.mean(dim=-1, keepdim=True)).sum(-1)


def test_a_difference_of_float_rounding_in_a_cancelling_sum_is_rounding_not_a_wrong_op():
    torch.manual_seed(0)
    args = (torch.randn(8, 4096) * 1000,)
    program = _export(CancellingSum().eval(), args)

    summary, (finding,) = verify(program.exported_program, program, args, {})

    first = summary.first_mismatch
    assert (first.target, first.onnx_op) == ("aten.sum.dim_IntList", "ReduceSum")
    verdict = first.verdict
    assert verdict.kind == "rounding" and verdict.onnx_nodes == ["ReduceSum"], verdict
    assert not verdict.alone_passed and verdict.alone_tolerance.startswith("float32: "), verdict
    assert verdict.onnx_float64_diff <= 10 * verdict.torch_float64_diff, verdict
    assert "float rounding, not a wrong op" in finding.message
    assert "this op's translation differs" not in finding.message
    assert f"past the verification's tolerance: {verdict.alone_tolerance}" in verdict_section(summary)


def test_a_float16_bert_whose_embeddings_onnxruntime_adds_in_float32_is_neither_the_op_nor_drift():
    from transformers import BertConfig, BertModel

    from onnxlens.exporter.torch_internals.active import internals
    from onnxlens.exporter.types import FirstMismatch, VerificationSummary
    from onnxlens.exporter.verify import runtime, verdict
    from onnxlens.exporter.verify.tolerance import Tolerance

    torch.manual_seed(0)
    config = BertConfig(vocab_size=500, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=64)
    model = BertModel(config).eval().half()
    args = (torch.randint(0, 500, (2, 16)),)
    program = _export(model, args)
    exported = program.exported_program

    summary, findings = verify(exported, program, args, {})
    assert summary.passed and findings == [], (summary, findings)  # a float16 unit: within its noise floor

    adds = [node for node in exported.graph.nodes if node.target == torch.ops.aten.add.Tensor]
    second_add = adds[1]  # the embeddings' second sum (their first two adds)
    assert "embeddings" in str(second_add.meta.get("nn_module_stack", {})), second_add.meta.get("nn_module_stack")
    onnx = program.model
    feeds = runtime.ort_feeds(onnx, runtime.user_inputs(exported, args, {}))
    graph_inputs = internals.graph_module_inputs(exported, args, {})
    judged, note = verdict.judge(exported, onnx, runtime.Sessions(onnx), feeds, graph_inputs, second_add,
                                 tolerance=Tolerance())
    assert note is None and judged.kind == "context", (judged, note)
    assert judged.alone_passed and judged.alone_max_abs_diff == 0
    assert judged.inputs and judged.inputs_max_abs_diff == 0
    assert "onnxruntime computes it otherwise inside the whole model" in judged.sentence()
    section = verdict_section(VerificationSummary(passed=False, first_mismatch=FirstMismatch(
        node=second_add.name, target="aten.add.Tensor", verdict=judged)))
    assert "**the op agrees alone; onnxruntime computes it otherwise inside the whole model**" in section
    assert f"| `{judged.inputs[0].name}` | 0 | 0 |" in section
