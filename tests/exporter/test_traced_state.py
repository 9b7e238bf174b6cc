"""A value of the trace left in the model's state and baked into the graph as a constant: the
failure (constant folding cannot read a fake tensor) names the constant, the line that stores it
and the lines that use it.

In code nobody here wrote: x-transformers' ALiBi position bias (README configuration,
`alibi_pos_bias=True`) caches its bias in forward (x_transformers.py, `AlibiPositionalBias`:
`self.register_buffer('bias', bias, persistent = False)`, and `return self.bias[..., -i:, -j:]`
when the cache is large enough; found by reading it). With a dynamic length, the first capture
fails on a specialization and the stock exporter retries with torch.export's suggested fixes; the
retry reads the cached fake tensor back. Stock: `PassError ... FoldConstantsPass: RuntimeError:
.numpy() is not supported for tensor subclasses` with no model line at all.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import x_transformers

from tests.exporter.engine_support import shared_pipeline, spec_for, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (x-transformers)

MODEL = '''
import torch
from torch.export import Dim
from x_transformers import Decoder, TransformerWrapper


def build():
    torch.manual_seed(0)
    return TransformerWrapper(num_tokens=256, max_seq_len=1024,
                              attn_layers=Decoder(dim=64, depth=2, heads=4, alibi_pos_bias=True,
                                                  alibi_num_heads=2)).eval()


def inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 256, (2, 24)),)


def shapes():
    return ({0: Dim("batch"), 1: Dim("length")},)
'''

LIBRARY = Path(x_transformers.__file__).resolve().parent / "x_transformers.py"


def test_a_cached_trace_value_is_named_with_the_lines_that_store_and_use_it(tmp_path):
    write(tmp_path, "alibi.py", MODEL)
    result = shared_pipeline().run(spec_for(tmp_path, "alibi", "alibi.py:build", "alibi.py:inputs",
                                            dynamic_shapes="alibi.py:shapes"))
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.severity == "error"]
    assert finding.code == "translation" and "RuntimeError: .numpy() is not supported" in finding.message
    assert "`attn_layers.rel_pos.bias` as a constant" in finding.message
    related = {(Path(r.file).resolve(), r.line): r.message for r in finding.related}
    stores = (LIBRARY, line_of(LIBRARY, "self.register_buffer('bias', bias, persistent = False)"))
    uses = (LIBRARY, line_of(LIBRARY, "return self.bias[..., -i:, -j:]"))
    assert "stores a traced value" in related[stores]
    assert "uses `attn_layers.rel_pos.bias`" in related[uses]
