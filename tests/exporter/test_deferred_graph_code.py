"""Graph modules made inside `graph_code_deferred()` make their code late, and name it as eager
ones would (exporter/torch_internals/deferred_graph_code.py).

Each test runs one sequence of graph-module events (make, recompile, run) twice from the same
torch.fx counter, once as stock makes them (eager) and once deferred, and compares the names
torch.fx gave the code that ran. These are torch's own classes and counter, no mocks."""

from __future__ import annotations

import torch
from torch.fx import _lazy_graph_module
from torch.fx.graph_module import GraphModule, _loader

from onnxlens.exporter.torch_internals.deferred_graph_code import EagerlyNamedGraphModule, graph_code_deferred


class _Doubling(torch.nn.Module):
    def forward(self, x):
        return x * 2


def _code_name(module: GraphModule) -> str:
    return type(module).forward.__code__.co_filename


def _events() -> tuple[list[str], int, bool]:
    """A child module, a parent calling it, passes recompiling both, another module made
    meanwhile, then the parent run. Returns the names of the code that ran, the counter, and
    whether the parent's code existed before it ran."""
    _loader.next_id = 1000
    child = torch.fx.symbolic_trace(_Doubling())
    root = torch.nn.Module()
    root.child = child
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (graph.call_module("child", (x,)), 1)))
    parent = _lazy_graph_module._make_graph_module(root, graph)  # recompiles the child too
    parent.recompile()  # a pass edited the graph
    child.recompile()
    other = torch.fx.symbolic_trace(_Doubling())
    parent.recompile()
    code_made_before_run = (not isinstance(parent, _lazy_graph_module._LazyGraphModule)
                            or type(parent).forward is not type(parent)._lazy_forward)
    assert torch.equal(parent(torch.ones(2)), torch.full((2,), 3.0))
    assert torch.equal(other(torch.ones(2)), torch.full((2,), 2.0))
    return [_code_name(parent), _code_name(parent.child), _code_name(other)], _loader.next_id, code_made_before_run


def test_deferred_code_takes_the_names_eager_code_takes():
    saved = _loader.next_id
    try:
        eager_names, eager_counter, eager_made_before_run = _events()
        with graph_code_deferred():
            deferred_names, deferred_counter, deferred_made_before_run = _events()
    finally:
        _loader.next_id = saved
    assert eager_made_before_run and not deferred_made_before_run  # deferred: made by the run
    assert deferred_names == eager_names
    assert deferred_counter == eager_counter
    assert len(set(eager_names)) == 3 and all(name.startswith("<eval_with_key>.10") for name in eager_names)


def _kind_made() -> type:
    """The class a graph module made now is of (under the class torch makes per module)."""
    return type(torch.fx.symbolic_trace(_Doubling())).__mro__[1]


def test_only_modules_torch_would_make_eager_are_deferred():
    """Dynamo chooses torch's own lazy modules, numbered as stock numbers them; TorchScript's
    callers ask for eager ones."""
    with graph_code_deferred():
        assert _kind_made() is EagerlyNamedGraphModule
        with _lazy_graph_module._use_lazy_graph_module(True):
            assert _kind_made() is _lazy_graph_module._LazyGraphModule
        with _lazy_graph_module._force_skip_lazy_graph_module():
            assert _kind_made() is GraphModule
    assert _kind_made() is GraphModule  # left as it was
