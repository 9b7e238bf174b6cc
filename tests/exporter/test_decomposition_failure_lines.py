"""Decomposition failures whose error names no node land on the node they are about
(exporter/pipeline/failures/failed_nodes.py, docs/diagnostics.md "Where a failure outside the
unsupported-op scan comes from").

* torch's own export test `test/export/test_export.py::TestExport.test_cond_branches_return_constant_int`:
  `torch.cond(x.sum() > 3, lambda: 0, lambda: 1, tuple())`. torch.export captures it; the ONNX
  exporter's type-promotion pass then asserts `Cannot detect fake_mode.` on a branch's subgraph,
  which computes no tensor (torch/onnx/_internal/fx/passes/type_promotion.py): no node, no line.
  The line is the `torch.cond` call, the only construct of the model.
* transformers' StaticCache (code nobody here wrote): a user's decoding step passes a
  `StaticCache` to a Llama. Stock fails in decomposition with `Constant
  model.model.layers.0.self_attn.lifted_tensor_0 is mutated in the forward method. Pls register
  it as buffer`: no node, no line. Read by hand (transformers 5.23, cache_utils.py): a
  `StaticLayer` creates `self.cumulative_length = torch.tensor(0, dtype=int)` in `__init__` —
  a plain tensor attribute, which torch.export lifts as a constant — and `update` mutates it in
  place, `self.cumulative_length.add_(kv_length)`, the line torch objects to. Before the
  `.add_` the tensor goes through `.to(self.device)` in `lazy_initialization` (an alias).
* the plain form of it: a tensor attribute (not a registered buffer) mutated in place in
  forward, `self.foo.add_(5)`.
* transformers' Swin with SDPA attention (the zoo's transformers/swin, timm's MaxViT in the
  vision zoo fails the same way): the decomposition keeps `scaled_dot_product_attention` and
  turns the `reshape` of its transposed output into a `view`, because the attention's fake
  output, masked by the relative position bias, is laid out [batch, tokens, heads, dim] there;
  the type promotion pass re-runs the graph, the attention's output comes out contiguous in
  [batch, heads, tokens, dim], and the view fails (`Cannot view a tensor ... with strides`).
  torch's traceback names the reshape (modeling_swin.py, SwinSelfAttention.forward); the
  attention call (transformers/integrations/sdpa_attention.py) goes unnamed. Checked by hand:
  with `attn_implementation="eager"` (no SDPA) stock exports. Before: the reshape only.

Ruled out: each of these was shown at the model's definition, "no line of your code is on the
failing call chain", with no related location.
"""

from __future__ import annotations

import pytest

from tests.exporter.engine_support import run_target, write
from tests.realworld.harness import library_file, line_in
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (transformers' Llama with a StaticCache)

MODELS = '''
import torch


class CondReturnsInt(torch.nn.Module):
    def forward(self, x):
        idx = torch.cond(x.sum() > 3, lambda: 0, lambda: 1, tuple())
        return x[idx]


class Counter(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.foo = torch.ones(3)

    def forward(self, x):
        self.foo.add_(5)
        return x + self.foo


def matrix():
    return (torch.randn(3, 3),)
'''

DECODER = '''
import torch
from transformers import LlamaConfig, LlamaForCausalLM, StaticCache, SwinConfig, SwinModel


class DecodingStep(torch.nn.Module):
    """One step of on-device generation: a Llama with a static key/value cache."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        config = LlamaConfig(vocab_size=1000, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
        self.model = LlamaForCausalLM(config).eval()
        self.cache = StaticCache(config=config, max_cache_len=32)

    def forward(self, input_ids):
        out = self.model(input_ids, past_key_values=self.cache, use_cache=True)
        return out.logits


def build_model():
    return DecodingStep().eval()


def build_swin():
    torch.manual_seed(0)
    config = SwinConfig(image_size=32, patch_size=4, embed_dim=32, depths=[1, 1], num_heads=[2, 4], window_size=4,
                        attn_implementation="sdpa")
    return SwinModel(config).eval()


def images():
    return (torch.rand(1, 3, 32, 32),)


def example_inputs():
    return (torch.randint(3, 1000, (1, 4)),)
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("decomposition-lines")
    write(root, "failing_decompositions.py", MODELS)
    write(root, "static_cache_decoder.py", DECODER)
    return root


def _only_decomposition(result):
    assert result.status == "failed"
    assert [f.code for f in result.findings] == ["decomposition"], result.findings
    return result.findings[0]


def test_cond_whose_branches_return_ints_is_reported_on_the_cond(workspace):
    result = run_target(workspace, "failing_decompositions.py:CondReturnsInt", "failing_decompositions.py:matrix")
    finding = _only_decomposition(result)
    models = workspace / "failing_decompositions.py"
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "torch.cond(x.sum() > 3"))
    assert "Cannot detect fake_mode" in finding.message and "at node cond" in finding.message
    assert "model's definition" not in finding.message


def test_tensor_attribute_mutated_in_place_is_reported_on_the_mutation(workspace):
    result = run_target(workspace, "failing_decompositions.py:Counter", "failing_decompositions.py:matrix")
    finding = _only_decomposition(result)
    models = workspace / "failing_decompositions.py"
    assert (finding.location.file, finding.location.line) == (str(models), line_of(models, "self.foo.add_(5)"))
    assert "Constant foo is mutated in the forward method" in finding.message
    assert "at node add_ (aten.add_.Tensor)" in finding.message


def test_transformers_static_cache_mutation_lands_on_the_users_call_with_the_librarys_add_related(workspace):
    result = run_target(workspace, "static_cache_decoder.py:build_model", "static_cache_decoder.py:example_inputs")
    finding = _only_decomposition(result)
    decoder = workspace / "static_cache_decoder.py"
    # Primary: the user's line that reaches the mutation; the innermost related location: the
    # library line that mutates the lifted constant.
    assert (finding.location.file, finding.location.line) == (
        str(decoder), line_of(decoder, "out = self.model(input_ids, past_key_values=self.cache"))
    cache_utils = library_file("transformers.cache_utils")
    add_line = line_in(cache_utils, "self.cumulative_length.add_(kv_length)", after="class StaticLayer(")
    assert (finding.related[0].file, finding.related[0].line) == (str(cache_utils), add_line)
    assert "is mutated in the forward method" in finding.message
    assert "in module `model.model.layers.0.self_attn` (LlamaAttention)" in finding.message


def test_a_view_made_for_another_layout_names_the_op_whose_output_changed_layout(workspace):
    result = run_target(workspace, "static_cache_decoder.py:build_swin", "static_cache_decoder.py:images")
    finding = _only_decomposition(result)
    assert "Cannot view a tensor with shape" in finding.message and "(aten.view.default)" in finding.message
    swin = library_file("transformers.models.swin.modeling_swin")
    reshape = line_in(swin, "attn_output = attn_output.reshape(*input_shape, -1).contiguous()",
                      after="class SwinAttention(")
    sdpa = library_file("transformers.integrations.sdpa_attention")
    attention = line_in(sdpa, "attn_output = torch.nn.functional.scaled_dot_product_attention(")
    # The failing view's line first, then where the layout it was made for comes from.
    assert [(r.file, r.line) for r in finding.related[:2]] == [(str(swin), reshape), (str(sdpa), attention)]
    assert finding.related[1].message.startswith(
        "the failing op's input comes from aten.scaled_dot_product_attention.default here, whose output this pass "
        "lays out otherwise than the graph recorded")
