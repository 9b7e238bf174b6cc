"""onnx-diagnostic, _unittests/ut_torch_export_patches/test_patch_transformers.py (MIT),
`test_sdpa_attention_forward_export_is_causal`: the model calls transformers'
`sdpa_attention_forward` with `is_causal=True` and no mask, exported with dynamic batch and
sequence dimensions. onnx-diagnostic's `patched_sdpa_attention_forward` replaces the library line
`is_causal = query.shape[2] > 1 and attention_mask is None and is_causal` ("PATCHED: remove the
test query.shape[2] > 1"). Here the library function is called unpatched, with the test's inputs."""

import torch
import transformers.integrations.sdpa_attention as sdpa_attention


class Model(torch.nn.Module):
    def forward(self, query, key, value):
        kwargs = {
            "module": None,
            "query": query,
            "key": key,
            "value": value,
            "attention_mask": None,
            "attention_dropout": 0,
            "scaling": 0.10206207261596575,
            "is_causal": True,
        }
        return sdpa_attention.sdpa_attention_forward(**kwargs)[0]


def build_model():
    return Model()


def example_inputs():
    return (torch.rand((1, 2, 1, 96)), torch.rand((1, 2, 4, 96)), torch.rand((1, 2, 4, 96)))


def dynamic_shapes():
    dyn = torch.export.Dim.DYNAMIC
    return ({0: dyn, 2: dyn}, {0: dyn, 2: dyn}, {0: dyn, 2: dyn})
