"""A user's token tagger around transformers' BertModel (random init: code nobody here wrote), the
workspace of the inlay-hint and graph-change tests and of their benchmark.

The user's lines, read off the code: the BERT call hands on `last_hidden_state` (rows, tokens,
hidden); the loop `hidden = block(hidden)` runs `Block.forward`, whose `return` line computes
each block's value (three blocks) while the loop line computes nothing itself; the head's line
computes the logits (rows, tokens, 5). `named()` declares the sizes as string dims (`batch`,
`seq`), `auto()` as `Dim.AUTO` (torch names them).
"""

from __future__ import annotations

from string import Template

SMALL_BERT = ("BertConfig(vocab_size=500, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,\n"
              "                            intermediate_size=64, max_position_embeddings=64)")

PYPROJECT = '''[project]
name = "tagging"
version = "0"

[tool.onnxlens]
verify = false

[[tool.onnxlens.target]]
name = "tagger"
model = "models/tagger.py:build"
inputs = "models/tagger.py:example_inputs"
dynamic-shapes = "models/tagger.py:$shapes"
'''

TAGGER = '''import torch
from torch import nn
from transformers import BertConfig, BertModel


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return x + torch.tanh(self.proj(x))


class Tagger(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        config = $bert
        self.bert = BertModel(config)
        self.blocks = nn.ModuleList(Block($hidden) for _ in range(3))
        self.head = nn.Linear($hidden, 5)

    def forward(self, input_ids, attention_mask):
        hidden = self.bert(input_ids, attention_mask=attention_mask).last_hidden_state
        for block in self.blocks:
            hidden = block(hidden)
        return self.head(hidden)


def build():
    torch.manual_seed(0)
    return Tagger().eval()


def example_inputs():
    torch.manual_seed(0)
    ids = torch.randint(0, $vocab, ($rows, $tokens))
    return (ids, torch.ones_like(ids))


def named():
    return {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"}}


def auto():
    auto = torch.export.Dim.AUTO
    return {"input_ids": {0: auto, 1: auto}, "attention_mask": {0: auto, 1: auto}}
'''

BERT_LINE = "hidden = self.bert(input_ids, attention_mask=attention_mask).last_hidden_state"
BLOCK_LINE = "return x + torch.tanh(self.proj(x))"
HEAD_LINE = "return self.head(hidden)"


def pyproject(shapes: str) -> str:
    """The config of the `tagger` target, its dynamic shapes from `shapes` ("named", "auto")."""
    return Template(PYPROJECT).substitute(shapes=shapes)


def tagger(*, bert: str = SMALL_BERT, hidden: int = 32, vocab: int = 500, rows: int = 2, tokens: int = 16) -> str:
    """models/tagger.py: a small BERT by default (`bert`: the BertConfig expression)."""
    return Template(TAGGER).substitute(bert=bert, hidden=hidden, vocab=vocab, rows=rows, tokens=tokens)
