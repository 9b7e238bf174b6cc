"""A symbolic value a torch function refuses for a plain argument, with the line that made it
(exporter/pipeline/failures/symbolic_arguments.py; failures torch leaves unplaced).

transformers' `sdpa_attention_forward` (integrations/sdpa_attention.py), called as onnx-diagnostic's
`test_sdpa_attention_forward_export_is_causal` calls it (is_causal=True, no mask, a dynamic query
length): `is_causal = q_length > 1 and attention_mask is None and is_causal` makes a SymBool,
which `scaled_dot_product_attention(..., is_causal=is_causal)` refuses. onnx-diagnostic's patch
replaces exactly that line (found by reading the library: the TODO above it says so too); the
traceback ends at the call, 34 lines further down, past a later `is_causal = False` in a branch
not taken.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import transformers.integrations.sdpa_attention as sdpa_attention

from tests.exporter.engine_support import run_target, write
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # library models (transformers)

MODELS = '''
import torch
import transformers.integrations.sdpa_attention as sdpa_attention


class Attention(torch.nn.Module):
    def forward(self, query, key, value):
        return sdpa_attention.sdpa_attention_forward(
            None, query, key, value, None, dropout=0.0, scaling=0.1, is_causal=True)[0]


def qkv():
    return (torch.rand((1, 2, 1, 96)), torch.rand((1, 2, 4, 96)), torch.rand((1, 2, 4, 96)))


def dynamic():
    dyn = torch.export.Dim.DYNAMIC
    return ({0: dyn, 2: dyn}, {0: dyn, 2: dyn}, {0: dyn, 2: dyn})


class OwnCausal(torch.nn.Module):
    def forward(self, q):
        causal = q.shape[2] > 1
        scale = 0.5
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=causal, scale=scale)


def q_only():
    return (torch.rand((1, 2, 3, 8)),)


def q_dynamic():
    return ({2: torch.export.Dim.DYNAMIC},)
'''


def test_the_library_line_that_made_the_symbool_is_related(tmp_path):
    write(tmp_path, "attention.py", MODELS)
    result = run_target(tmp_path, "attention.py:Attention", "attention.py:qkv", dynamic_shapes="attention.py:dynamic")
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert "argument 'is_causal' must be bool, not SymBool" in finding.message
    library = str(Path(sdpa_attention.__file__).resolve())
    made = line_of(Path(library), "is_causal = q_length > 1 and attention_mask is None and is_causal")
    assert (library, made) in [(r.file, r.line) for r in finding.related], finding.related
    assert "is a SymBool: see its assignment in `sdpa_attention_forward`" in finding.message


def test_the_users_line_that_made_the_symbool_is_related(tmp_path):
    path = write(tmp_path, "attention.py", MODELS)
    result = run_target(tmp_path, "attention.py:OwnCausal", "attention.py:q_only", dynamic_shapes="attention.py:q_dynamic")
    assert result.status == "failed"
    [finding] = [f for f in result.findings if f.code == "torch-export"]
    assert finding.location.line == line_of(path, "scaled_dot_product_attention(q, q, q, is_causal=causal")
    assert line_of(path, "causal = q.shape[2] > 1") in [r.line for r in finding.related], finding.related
