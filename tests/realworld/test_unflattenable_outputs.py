"""An output torch.export cannot flatten is named, with the forward that returns
it, the line that builds it and the fixes that exist (docs/diagnostics.md, `torch-export`).

The model: transformers GPT-2 (GPT2LMHeadModel, tiny, random init) with `use_cache=True` in
its inputs, as `generate`-style code calls it. Both capture strategies fail after forward
returned: `Found <class 'transformers.cache_utils.DynamicCache'> in output, which is not a known
type` (non-strict), `Encountered unrecognized type UserDefinedObjectVariable(DynamicCache) at
output 1` (strict) — no line of anyone's code.

Found by hand (transformers 5.23 source, the capture errors): GPT2Model.forward builds the
cache, `past_key_values = DynamicCache(config=self.config)` (modeling_gpt2.py, under `if
use_cache and past_key_values is None`), and GPT2LMHeadModel.forward returns it as
`past_key_values` of its CausalLMOutputWithCrossAttentions; the user's line that asks for it is
the inputs' `"use_cache": True`. The fixes named were each tried with the stock exporter:
`use_cache=False` and transformers' `register_cache_pytrees_for_model(model)` export (the
second target below exports with the latter, through onnxlens, with the stock bytes).
(transformers' older `register_dynamic_cache_export_support()` is named too, as a function of
the library that registers the cache's class: the program it gives fails the ONNX exporter's
decomposition, `Constant tensor lifted_tensor_0 is not in the constants dictionary`, which
onnxlens places on the node that reads that constant, in transformers' cache_utils.py.)

torch's error alone, the answer these tests rule out: `error[torch-export] torch.export
(non-strict) failed: RuntimeError: Found <class 'transformers.cache_utils.DynamicCache'> in
output, which is not a known type. ...` on the model factory, no related location.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_asyncio

from tests.realworld.harness import (check, errors, library_file, line_in, places, same_files, stock_export,
                                     workspace)
from tests.support.lsp import Client, uri_path
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models through onnxlens check and the language server

MODEL = '''
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel


    def build_model():
        torch.manual_seed(0)
        config = GPT2Config(n_embd=32, n_layer=1, n_head=4, vocab_size=99, n_positions=64)
        return GPT2LMHeadModel(config).eval()


    def registered_model():
        """The fix the finding names: transformers' caches registered as pytree nodes."""
        from transformers.exporters.exporter_dynamo import register_cache_pytrees_for_model

        model = build_model()
        register_cache_pytrees_for_model(model)
        return model


    def example_inputs():
        torch.manual_seed(0)
        return {"input_ids": torch.randint(0, 99, (1, 6)),
                "use_cache": True}
'''

TARGETS = '''
    [[tool.onnxlens.target]]
    name = "cached"
    model = "models/gpt2.py:build_model"
    inputs = "models/gpt2.py:example_inputs"

    [[tool.onnxlens.target]]
    name = "registered"
    model = "models/gpt2.py:registered_model"
    inputs = "models/gpt2.py:example_inputs"
'''

GPT2 = library_file("transformers.models.gpt2.modeling_gpt2")
BUILT = (GPT2, line_in(GPT2, "past_key_values = DynamicCache(config=self.config)", after="class GPT2Model("))
# The `return` statement of GPT2LMHeadModel.forward that hands the cache out.
RETURNED = (GPT2, line_in(GPT2, "return CausalLMOutputWithCrossAttentions(", after="class GPT2LMHeadModel("))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = workspace(tmp_path_factory.mktemp("gpt2-cache"), {"models/gpt2.py": MODEL}, TARGETS, verify=False)
    process, data = check(root)
    return root, process, {target["name"]: target for target in data["targets"]}


def test_the_cache_output_is_named_with_where_it_is_built_and_returned(run):
    root, process, targets = run
    [finding] = errors(targets["cached"])
    assert finding["code"] == "torch-export"
    message = finding["message"]
    assert ("`['past_key_values']` of what GPT2LMHeadModel.forward returns is a "
            "transformers.cache_utils.DynamicCache") in message
    found = places(finding, root)
    assert BUILT in found and RETURNED in found
    models = root / "models" / "gpt2.py"
    assert found[0] == (models.resolve(), line_of(models, "def build_model"))  # no line of the user's built it
    assert (models.resolve(), line_of(models, '"use_cache": True')) in found  # ... but this one asked for it
    assert "Traceback" not in process.stderr


def test_the_fixes_named_exist_and_one_of_them_exports_with_the_stock_bytes(run, tmp_path):
    root, _, targets = run
    [finding] = errors(targets["cached"])
    # Found in the code: the `if use_cache:` around the construction, transformers' functions
    # that call torch's pytree registration and name the cache's class or a base of it.
    assert ("it is only made or returned when `use_cache` is true (`if use_cache:`, "
            "transformers/models/gpt2/modeling_gpt2.py:") in finding["message"]
    assert "your inputs pass use_cache=True: pass use_cache=False" in finding["message"]
    assert "`transformers.exporters.exporter_dynamo.register_cache_pytrees_for_model(model)`" in finding["message"]
    registered = targets["registered"]
    assert errors(registered) == [] and registered["status"] == "ok", registered["diagnostics"]
    stock = tmp_path / "stock" / "registered.onnx"
    exported = stock_export(root, "models.gpt2", "registered_model", "example_inputs", stock)
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert same_files(root / ".onnxlens" / "registered.onnx", stock)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    root = workspace(tmp_path_factory.mktemp("gpt2-cache-lsp"), {"models/gpt2.py": MODEL}, TARGETS, verify=False)
    client = await Client.launch(root, settings={"debounceMs": 100})
    yield client
    await client.close()


@pytest.mark.asyncio(loop_scope="module")
async def test_language_server_shows_the_cache_finding_with_its_library_lines(client):
    models = client.root / "models" / "gpt2.py"
    await client.exports_finished("cached", 1)
    await client.exports_finished("registered", 1)
    diagnostic = await client.wait_diagnostic(models, "torch-export", line_of(models, "def build_model"))
    assert "DynamicCache" in diagnostic.message
    related = {(uri_path(r.location.uri), r.location.range.start.line + 1) for r in diagnostic.related_information}
    assert BUILT in related and RETURNED in related
    assert [d for d in client.diagnostics_of(models) if d.code == "torch-export"] == [diagnostic]
    assert Path(client.root / ".onnxlens" / "registered.onnx").exists()
