"""nanoGPT's GPT-2 124M (12 layers, n_embd 768) from its default GPTConfig, random init (seeded),
dynamic batch and sequence. nanoGPT is not on PyPI: benchmarks/real_size.py writes its model.py
into the benchmark workspace as `models/nanogpt_model.py` at run time (from a checkout of
karpathy/nanoGPT), with one line changed to call an op that has no ONNX translation."""

import torch
from torch.export import Dim

from models.nanogpt_model import GPT, GPTConfig


def build_model() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig()).eval()


def example_inputs():
    torch.manual_seed(0)
    return (torch.randint(0, 50304, (2, 64)),)


def dynamic_shapes():
    return {"idx": {0: Dim("batch", min=1, max=64), 1: Dim("seq", min=2, max=1024)}}
