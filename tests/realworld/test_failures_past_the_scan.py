"""Failures outside the unsupported-op scan keep their place (docs/diagnostics.md:
`decomposition`, `onnx-checker`, and onnxruntime refusing the model during verification).

Three real library models, tiny and randomly initialised, each failing in one of those stages;
for each, the responsible line was found by hand and must be the primary or a related location:

* decomposition — transformers T5 with `attn_implementation="sdpa"` and a padded attention
  mask (the models' common input): `ValueError: Cannot view a tensor with shape
  torch.Size([2, 8, 4, 8]) and strides (256, 8, 64, 1) as a tensor with shape (2, 8, 32)!`.
  Found by hand: the error names no node; the torch.fx.Interpreter frames on its traceback
  hold `view_4`, whose stack trace ends in T5Attention.forward at
  `attn_output = attn_output.reshape(*input_shape, -1).contiguous()` (modeling_t5.py): the
  attention output's (2, 8, 4, 8) reshaped to (2, 8, 32) matches 4 heads of 8; at capture the
  sdpa kernel's layout made that reshape a view, after decomposition it is not one. The stock
  exporter fails the same way ("Failed to decompose the FX graph").
* onnx.checker — x-transformers' decoder with scaled sinusoidal positions and dynamic batch and
  length: `(op_type:Einsum, node name: node_einsum): Inputs has inconsistent type
  tensor(float)`. Found by hand: node_einsum's metadata names FX node `einsum`, whose stack
  trace ends in ScaledSinusoidalEmbedding.forward at `emb = einsum('i, j -> i j', pos,
  self.inv_freq)` (x_transformers.py): `pos` is an int64 arange, `inv_freq` float; torch
  promotes, ONNX Einsum wants one type. (Stock writes this model without checking it;
  onnxruntime cannot load it.)
* onnxruntime — transformers Llama in bfloat16 (as `torch_dtype=torch.bfloat16` loads it):
  exports, but onnxruntime's CPU provider has no bfloat16 Mul: `Could not find an
  implementation for Mul(14) node with name 'node_mul_4'`. Found by hand: node_mul_4's
  metadata names FX node `mul_4`, from LlamaRMSNorm.forward at `return self.weight *
  hidden_states.to(input_dtype)` (modeling_llama.py). A warning: the model is saved, with the
  stock exporter's bytes.

The wrong answers these tests rule out: the decomposition and checker findings on the model
factory with no related location (neither error names a line), and the onnxruntime warning's
primary location in site-packages instead of the workspace.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import pytest_asyncio

from tests.realworld.harness import (check, errors, library_file, line_in, places, same_files, stock_export,
                                     workspace)
from tests.support.lsp import Client, uri_path
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

T5 = '''
    import torch
    from transformers import T5Config, T5Model


    def build_model():
        torch.manual_seed(0)
        config = T5Config(d_model=32, d_ff=64, d_kv=8, num_layers=1, num_decoder_layers=1, num_heads=4,
                          vocab_size=99, use_cache=False, attn_implementation="sdpa")
        return T5Model(config).eval()


    def example_inputs():
        torch.manual_seed(0)
        input_ids = torch.randint(3, 99, (2, 8))
        attention_mask = torch.ones(2, 8, dtype=torch.long)
        attention_mask[1, 5:] = 0  # the second sentence is padded
        return {"input_ids": input_ids, "attention_mask": attention_mask, "decoder_input_ids": input_ids}
'''

SINUSOIDAL = '''
    import torch
    from torch.export import Dim
    from x_transformers import Decoder, TransformerWrapper


    def build_model():
        torch.manual_seed(0)
        return TransformerWrapper(num_tokens=64, max_seq_len=32, scaled_sinu_pos_emb=True,
                                  attn_layers=Decoder(dim=32, depth=1, heads=2)).eval()


    def example_inputs():
        torch.manual_seed(0)
        return (torch.randint(0, 64, (2, 12)),)


    def dynamic_shapes():
        return ({0: Dim("batch"), 1: Dim("length")},)
'''

LLAMA = '''
    import torch
    from transformers import LlamaConfig, LlamaModel


    def build_model():
        torch.manual_seed(0)
        config = LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                             num_key_value_heads=2, vocab_size=99, max_position_embeddings=64, use_cache=False)
        return LlamaModel(config).to(torch.bfloat16).eval()


    def example_inputs():
        torch.manual_seed(0)
        return {"input_ids": torch.randint(3, 99, (2, 8))}
'''

FILES = {"models/t5.py": T5, "models/sinusoidal.py": SINUSOIDAL, "models/llama.py": LLAMA}
TARGETS = '''
    [[tool.onnxlens.target]]
    name = "t5"
    model = "models/t5.py:build_model"
    inputs = "models/t5.py:example_inputs"

    [[tool.onnxlens.target]]
    name = "sinusoidal"
    model = "models/sinusoidal.py:build_model"
    inputs = "models/sinusoidal.py:example_inputs"
    dynamic-shapes = "models/sinusoidal.py:dynamic_shapes"

    [[tool.onnxlens.target]]
    name = "llama"
    model = "models/llama.py:build_model"
    inputs = "models/llama.py:example_inputs"
'''


def _responsible() -> dict[str, tuple[Path, int]]:
    t5 = library_file("transformers.models.t5.modeling_t5")
    x_transformers = library_file("x_transformers.x_transformers")
    llama = library_file("transformers.models.llama.modeling_llama")
    return {
        "t5": (t5, line_in(t5, "attn_output = attn_output.reshape(*input_shape, -1).contiguous()",
                           after="class T5Attention")),
        "sinusoidal": (x_transformers, line_in(x_transformers, "emb = einsum('i, j -> i j', pos, self.inv_freq)",
                                               after="class ScaledSinusoidalEmbedding")),
        "llama": (llama, line_in(llama, "return self.weight * hidden_states.to(input_dtype)",
                                 after="class LlamaRMSNorm")),
    }


RESPONSIBLE = _responsible()


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = workspace(tmp_path_factory.mktemp("past-the-scan"), FILES, TARGETS)
    process, data = check(root)
    return root, process, {target["name"]: target for target in data["targets"]}


def _only(target: dict, code: str, severity: str = "error") -> dict:
    found = [d for d in target["diagnostics"] if d["code"] == code and d["severity"] == severity]
    assert len(found) == 1, target["diagnostics"]
    return found[0]


def test_decomposition_failure_lands_on_the_node_it_was_decomposing(run):
    root, process, targets = run
    finding = _only(targets["t5"], "decomposition")
    assert RESPONSIBLE["t5"] in places(finding, root)
    assert "view_4 (aten.view.default)" in finding["message"]
    assert "module `encoder.block.0.layer.0.SelfAttention` (T5Attention)" in finding["message"]
    assert finding["line"] == line_of(root / "models/t5.py", "def build_model")  # no line of the user's
    assert "Traceback" not in process.stderr


def test_checker_failure_names_the_onnx_node_its_types_and_its_line(run):
    root, _, targets = run
    finding = _only(targets["sinusoidal"], "onnx-checker")
    assert RESPONSIBLE["sinusoidal"] in places(finding, root)
    assert "ONNX node `node_einsum` (Einsum: int64, float -> float)" in finding["message"]
    assert "from node einsum (aten.einsum.default) in module `pos_emb` (ScaledSinusoidalEmbedding)" in finding["message"]


def test_onnxruntime_failure_names_the_node_and_the_model_still_exports_with_stock_bytes(run, tmp_path):
    root, _, targets = run
    target = targets["llama"]
    assert errors(target) == [] and target["status"] == "ok"
    # A verification that cannot run is a `verification` warning (docs/diagnostics.md), not a mismatch.
    finding = _only(target, "verification", "warning")
    assert "onnxruntime could not run the exported model at ONNX node `node_mul_4` (Mul: bfloat16, bfloat16 -> bfloat16)" \
        in finding["message"]
    assert "module `layers.0.input_layernorm` (LlamaRMSNorm)" in finding["message"]
    # Warnings stay in the workspace too: the model's definition, the library line related.
    assert (root / finding["file"]).resolve() == (root / "models/llama.py").resolve()
    assert RESPONSIBLE["llama"] in places(finding, root)[1:]
    stock = tmp_path / "stock" / "llama.onnx"
    exported = stock_export(root, "models.llama", "build_model", "example_inputs", stock)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert same_files(root / ".onnxlens" / "llama.onnx", stock)


ALIAS = '''
    import torch

    library = torch.library.Library("aliasing", "FRAGMENT")
    library.define("first_half(Tensor(a) x) -> Tensor(a)")  # returns a view of its input


    @torch.library.impl(library, "first_half", "CompositeExplicitAutograd")
    def _first_half(x):
        return x.narrow(-1, 0, x.shape[-1] // 2)


    @torch.library.register_fake("aliasing::first_half")
    def _first_half_fake(x):
        return x.narrow(-1, 0, x.shape[-1] // 2)


    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 8)

        def forward(self, x):
            h = self.linear(x)
            return torch.ops.aliasing.first_half(h) * 2


    def inputs():
        return (torch.randn(2, 8),)
'''


def test_decomposition_failure_of_the_users_own_op_lands_on_its_call(tmp_path):
    """A decomposition failure in the user's own code: functionalization
    refuses "a custom (non-ATen) operator whose output has alias annotations". In process (the
    engine's shared pipeline): this one needs no library."""
    from tests.exporter.engine_support import shared_pipeline, spec_for

    path = tmp_path / "aliasing.py"
    path.write_text(textwrap.dedent(ALIAS))
    result = shared_pipeline().run(spec_for(tmp_path, "aliasing", "aliasing.py:Model", "aliasing.py:inputs"))
    [finding] = result.findings
    assert (finding.code, finding.stage) == ("decomposition", "decompose")
    assert (finding.location.file, finding.location.line) == (str(path), line_of(path, "first_half(h) * 2"))
    covered = finding.source_line[finding.location.column - 1:finding.location.end_column - 1]
    assert covered == "torch.ops.aliasing.first_half(h)"
    assert "alias annotations" in finding.message and "While executing" not in finding.message


def test_element_types_are_named():
    from onnxlens.exporter.verify.onnx_nodes import with_type_names

    text = "[TypeInferenceError] Inferred elem type differs from existing elem type: (14) vs (1)"
    assert with_type_names(text).endswith("existing elem type: complex64 (14) vs float (1)")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    root = workspace(tmp_path_factory.mktemp("past-the-scan-lsp"), FILES, TARGETS)
    client = await Client.launch(root, settings={"debounceMs": 100})
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_puts_each_failure_where_its_node_came_from(client):
    root = client.root
    for name in ("t5", "sinusoidal", "llama"):
        await client.exports_finished(name, 1)
    for name, code in (("t5", "decomposition"), ("sinusoidal", "onnx-checker"), ("llama", "verification")):
        model = root / "models" / f"{name}.py"
        diagnostic = await client.wait_diagnostic(model, code, line_of(model, "def build_model"))
        related = {(uri_path(r.location.uri), r.location.range.start.line + 1)
                   for r in diagnostic.related_information or []}
        assert RESPONSIBLE[name] in related, (name, related)
