"""Torch's decompositions the exporter leaves out: offered for ops without a translation, applied
when a target asks for them (`extra-decompositions`, docs/configuration.md).

The exporter decomposes with all of torch._decomp's table, so an op that reaches the scan has
no decomposition there, or one that still ends in ops without a translation. torch keeps other
decompositions (torch._inductor's table: `index_reduce`, `put`, ...). For an op without a
translation, `offer_for` traces such a decomposition on the call's example shapes and offers it
only when every op it leads to has a translation in the job's registry; the quick fix then adds
the op to the target's `extra-decompositions`, and the re-export's verification says whether the
numbers agree. Which table holds them is the adapter's business (`internals.extra_decomposition`).
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import DecompositionOffer

# Ops of symbolic-int arithmetic are not in a trace on concrete shapes; the graph's inputs and
# outputs are no ops.
_NOT_OPS = ("placeholder", "output", "get_attr")


def offer_for(node: Any, registry: Any, decompositions: dict, log: Callable[[str], None]) -> DecompositionOffer | None:
    """The decomposition to offer for an FX node whose op has no translation, or None when torch
    has none beside the exporter's or it leads to an op without a translation too."""
    op = node.target
    decomposition = internals.extra_decomposition(op) if internals.is_op_overload(op) else None
    if decomposition is None:
        return None
    try:
        graph = internals.trace_call_on_meta(decomposition, node, decompositions)
    except Exception as error:  # noqa: BLE001 - it does not apply to this call: no offer
        log(f"torch's extra decomposition of {internals.op_name(op)} does not trace here: {type(error).__name__}: {error}")
        return None
    into = []
    for traced in graph.graph.nodes:
        if traced.op in _NOT_OPS or not internals.is_op_overload(traced.target):
            continue
        if internals.dispatch(traced, registry)[0] is None:
            return None
        into.append(internals.op_name(traced.target))
    return DecompositionOffer(op=internals.op_name(op), source=where_defined(decomposition) or "torch",
                              into=list(dict.fromkeys(into)))


def extra_table(names: list[str]) -> tuple[dict, list[str]]:
    """The decompositions a target's `extra-decompositions` names, by op overload, and a problem
    per name torch has no such op or no such decomposition for (messages for a finding)."""
    table: dict = {}
    problems = []
    for name in names:
        ops = internals.resolve_op(name)
        if not ops:
            problems.append(f"{name} is not an op torch knows (write it as namespace.op or namespace.op.overload, "
                            "e.g. aten.index_reduce.default)")
            continue
        found = {op: internals.extra_decomposition(op) for op in ops}
        found = {op: function for op, function in found.items() if function is not None}
        if not found:
            problems.append(f"torch has no decomposition of {name} beyond the ones the exporter already applies")
        table.update(found)
    return table, problems


def where_defined(function: Callable[..., Any]) -> str | None:
    """Where a torch function is written, `torch/_inductor/decomposition.py:1066` (None: unknown);
    torch's decorators wrap most decompositions."""
    try:
        function = inspect.unwrap(function)
        file, line = inspect.getsourcefile(function) or "", inspect.getsourcelines(function)[1]
    except (OSError, TypeError):
        return None
    marker = file.rfind("/torch/")
    return f"{file[marker + 1:] if marker >= 0 else file}:{line}"
