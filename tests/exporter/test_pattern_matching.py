"""The check in front of onnxscript's pattern matcher (pipeline/pattern_matching.py): the optimizer
makes the same model with it, and it spares the combinations that could not match.

The model is transformers' BertModel from a small config (random weights, seeded): its translated
graph meets onnxscript's rules with several output nodes on every node. The same unoptimized
export is optimized twice, once with onnxscript's own matcher and once with the check; the two
models are compared as serialized bytes, weights included.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest
import torch
from onnxscript.rewriter import _matcher

import onnxlens.exporter.pipeline.pattern_matching as pattern_matching
from onnxlens.exporter.pipeline.stages.optimize import optimize


def _bert() -> tuple[torch.nn.Module, tuple]:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128,
                        vocab_size=500)
    return BertModel(config).eval(), (torch.randint(0, 500, (2, 8)), torch.ones(2, 8, dtype=torch.long))


def _optimized(with_check: bool, monkeypatch) -> tuple[bytes, int]:
    """The optimized model's bytes, and how many times a graph's nodes were walked."""
    model, args = _bert()
    program = torch.onnx.export(model, args, dynamo=True, optimize=False, verbose=False)
    walks = 0
    walk = ir.Graph.__iter__

    def counted(self):
        nonlocal walks
        walks += 1
        return walk(self)

    monkeypatch.setattr(ir.Graph, "__iter__", counted)
    pattern_matching.uninstall()
    if with_check:
        assert pattern_matching.install()
    try:
        program.optimize()
    finally:
        pattern_matching.uninstall()
        monkeypatch.undo()
    return ir.serde.serialize_model(program.model).SerializeToString(), walks


def test_the_optimizer_makes_the_same_model_walking_the_graph_less(monkeypatch):
    own, own_walks = _optimized(False, monkeypatch)
    checked, checked_walks = _optimized(True, monkeypatch)
    assert own == checked
    # onnxscript's own matcher walks the graph once per node for each rule with several output
    # nodes; with the check, only for a node that matches the rule's first output node.
    nodes = len(ir.from_proto(onnx.load_from_string(own)).graph)
    assert own_walks > nodes, f"{own_walks} walks for {nodes} nodes: no rule with several output nodes ran"
    assert checked_walks < own_walks - nodes


def test_the_optimize_stage_installs_it():
    pattern_matching.uninstall()
    model, args = _bert()
    program = torch.onnx.export(model, args, dynamo=True, optimize=False, verbose=False)
    optimize(program)
    assert pattern_matching._original is not None


def test_an_unknown_onnxscript_release_keeps_its_own_matcher(monkeypatch):
    import onnxscript

    pattern_matching.uninstall()
    monkeypatch.setattr(onnxscript, "__version__", "0.99.0")
    original = _matcher.SimplePatternMatcher.match
    assert not pattern_matching.install()
    assert _matcher.SimplePatternMatcher.match is original


@pytest.fixture(autouse=True)
def _installed_afterwards():
    """Other tests in this process run the pipeline, which installs it: leave it installed."""
    yield
    pattern_matching.install()
