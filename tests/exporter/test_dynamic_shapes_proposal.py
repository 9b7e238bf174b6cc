"""The dynamic-shapes factory proposed for a target without one: which dimensions,
keyed by which names, on the signatures of library models nobody here wrote (transformers'
BERT and ViT) and on the cases that get no proposal."""

from __future__ import annotations

import pytest
import torch

from onnxlens.exporter.proposals.dynamic_shapes import propose

pytestmark = pytest.mark.slow  # library models (transformers' BERT and ViT)


def _spec(proposal):
    namespace: dict = {}
    exec(proposal.source, namespace)  # the text the quick fix writes, run as the loader calls it
    return namespace[proposal.function]()


def test_token_ids_and_mask_get_batch_and_seq():
    from transformers import BertConfig, BertModel

    model = BertModel(BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32))
    proposal = propose(model, (torch.randint(0, 50, (3, 7)),), {"attention_mask": torch.ones(3, 7, dtype=torch.long)})
    assert proposal.dims == ["batch", "seq"] and proposal.sizes == [3, 7]
    assert _spec(proposal) == {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}
    assert "fixes sizes 0 and 1" not in proposal.source


def test_an_image_model_gets_the_batch_only():
    from transformers import ViTConfig, ViTModel

    model = ViTModel(ViTConfig(image_size=32, patch_size=8, hidden_size=16, num_hidden_layers=1,
                               num_attention_heads=2, intermediate_size=32))
    proposal = propose(model, (torch.randn(2, 3, 32, 32),), {})
    assert proposal.dims == ["batch"]
    assert _spec(proposal) == {"pixel_values": {0: "batch"}}


def test_a_scalar_tensor_input_gets_none():
    class Denoiser(torch.nn.Module):  # a diffusion step's signature: a sample and a 0-d timestep
        def forward(self, sample, timestep):
            return sample * timestep

    proposal = propose(Denoiser(), (torch.randn(2, 3, 8, 8), torch.tensor(10)), {})
    assert _spec(proposal) == {"sample": {0: "batch"}, "timestep": None}


def test_a_batch_of_one_says_torch_fixes_it():
    class Net(torch.nn.Module):
        def forward(self, x):
            return x

    proposal = propose(Net(), (torch.randn(1, 4),), {})
    assert _spec(proposal) == {"x": {0: "batch"}}
    assert "The example's batch is 1: torch.export fixes sizes 0 and 1" in proposal.source


def test_no_proposal_for_variadic_inputs_or_no_tensors():
    class Variadic(torch.nn.Module):
        def forward(self, *xs):
            return xs

    class Scalars(torch.nn.Module):
        def forward(self, n: int, scale: float = 1.0):
            return n

    assert propose(Variadic(), (torch.randn(2, 3),), {}) is None
    assert propose(Scalars(), (3,), {}) is None
