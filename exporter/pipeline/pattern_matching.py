"""onnxscript's rewrite rules, matched without trying every combination when the first node fails.

The optimizer (`ONNXProgram.optimize`, the optimize stage) tries each rewrite rule on each node.
For a rule whose pattern has several output nodes, onnxscript 0.7's `SimplePatternMatcher.match`
indexes the whole graph by op and then tries every combination of candidate nodes, the given
node first in each — even when the given node does not match the pattern's first output node,
so that every combination fails at its first step. That is a walk of the graph per node and
rule: on the 6-layer example encoder, 1,080 such calls, every one a failure, ~150 ms of the
optimizer's ~400 ms.

`install()` puts a check in front of it: when the given node does not match the pattern's first
output node, the match fails at once; otherwise onnxscript's own `match` runs, as before. The
check is the first step of each of those combinations (`_multi_match` matches the pattern's
output nodes in order, each after `_init_match`), so the matches found, and the rewrites and the
bytes of the model, are onnxscript's — tests/exporter/test_pattern_matching.py compares the
optimized model with and without it, and the zoo compares every saved model with stock's. A
failed match's reason (read only by onnxscript's tracer and verbose output) may differ: with a
tracer or `verbose`, onnxscript's own `match` runs unchanged.

Only for the onnxscript releases whose matcher this was read from (`KNOWN_RELEASES`); any other
release keeps its own matcher.
"""

from __future__ import annotations

from typing import Any

KNOWN_RELEASES = ("0.7.",)

_original: Any = None  # onnxscript's own SimplePatternMatcher.match, once installed


def install() -> bool:
    """Put the check in front of onnxscript's matcher (once per process); whether it is there."""
    global _original
    if _original is not None:
        return True
    import onnxscript

    if not onnxscript.__version__.startswith(KNOWN_RELEASES):
        return False
    from onnxscript.rewriter import _matcher

    matcher = _matcher.SimplePatternMatcher
    if not all(hasattr(matcher, name) for name in ("match", "_init_match", "_match_node", "_multi_match")):
        return False
    _original = matcher.match
    matcher.match = _match
    return True


def uninstall() -> None:
    """onnxscript's own matcher back (for the test that compares the two)."""
    global _original
    if _original is not None:
        from onnxscript.rewriter import _matcher

        _matcher.SimplePatternMatcher.match = _original
        _original = None


def _match(self: Any, model: Any, graph_or_function: Any, node: Any, *, verbose: int = 0,
           remove_nodes: bool = True, tracer: Any = None) -> Any:
    pattern = self.pattern
    if not pattern.has_single_output_node and not verbose and tracer is None:
        from onnxscript import ir
        from onnxscript.rewriter import _basics

        # What onnxscript's match sets before it matches, then the first step of every combination.
        self._tracer = tracer
        self._graph = graph_or_function if isinstance(graph_or_function, ir.Graph) else graph_or_function.graph
        self._init_match(verbose)
        if not self._match_node(pattern.output_nodes[0], node):
            return _basics.MatchResult().fail("No match found.")
    return _original(self, model, graph_or_function, node, verbose=verbose, remove_nodes=remove_nodes, tracer=tracer)
