"""The exporter's lookup tables, built once per process and reused by every job.

The public `torch.onnx.export` rebuilds the ONNX registry (~0.3 s), the ONNX-friendly
decomposition table (~0.035 s) and the set of CompositeImplicitAutograd ops
(~0.035 s) on every call: most of a warm export of a small model. They only depend on the
opset, on the registered translations and on the op namespaces torch knows (`torch.ops._dir`:
a user's `torch.library.custom_op` adds one), so they are cached under those keys.

Custom translations mutate a registry: each job gets its own copy of the cached one, so an
in-process job never leaks its registrations into the next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch.export import exported_program as _exported_program
from torch.onnx._internal.exporter import _constants, _decomp, _registration

# The opset the public API targets when none is given (torch.onnx.export(dynamo=True)).
try:
    from torch.onnx._constants import ONNX_DEFAULT_OPSET as DEFAULT_OPSET
except ImportError:  # pragma: no cover - older torch
    DEFAULT_OPSET = 20


@dataclass
class DecompositionTables:
    """run_decompositions' inputs, split once the way ExportedProgram.run_decompositions does."""

    cia_to_decomp: dict
    python_decomp_table: dict


def registry_opset(opset: int) -> int:
    """As the public API: below torchlib's own opset, build at torchlib's and convert later."""
    return max(opset, _constants.TORCHLIB_OPSET)


class Tables:
    def __init__(self) -> None:
        self._registries: dict[int, _registration.ONNXRegistry] = {}
        self._decompositions: dict[tuple, DecompositionTables] = {}

    def registry(self, opset: int, custom: dict | None = None) -> _registration.ONNXRegistry:
        """A private copy of the cached registry for `opset`, with `custom` translations added."""
        build_opset = registry_opset(opset)
        base = self._registries.get(build_opset)
        if base is None:
            base = _registration.ONNXRegistry.from_torchlib(opset_version=build_opset)
            self._registries[build_opset] = base
        copy = _registration.ONNXRegistry()
        copy._opset_version = base._opset_version
        copy.functions = {key: list(metas) for key, metas in base.functions.items()}
        for torch_op, function in (custom or {}).items():
            for overload in _overloads(torch_op):
                copy.register_op(overload, function, is_complex=False)
        return copy

    def decompositions(self, registry: _registration.ONNXRegistry, custom_key: tuple = ()) -> DecompositionTables:
        """Fresh dicts (run_decompositions may mutate them) of the cached tables."""
        key = (registry.opset_version, custom_key, tuple(sorted(torch.ops._dir)))
        tables = self._decompositions.get(key)
        if tables is None:
            onnx_ops = set(_decomp.get_onnx_implemented_overloads(registry))
            table = _decomp.create_onnx_friendly_decomposition_table(onnx_ops)
            cia, python = _exported_program._split_decomp_table_to_cia_and_python_decomp(table)
            tables = DecompositionTables(cia, python)
            # Namespaces only grow: tables for an older set of them are never asked for again.
            for old in [k for k in self._decompositions if k[:2] == key[:2]]:
                del self._decompositions[old]
            self._decompositions[key] = tables
        return DecompositionTables(dict(tables.cia_to_decomp), dict(tables.python_decomp_table))


def custom_table_key(custom: dict | None) -> tuple:
    """The decomposition table depends on which ops have translations, not on the functions."""
    return tuple(sorted(str(op) for torch_op in (custom or {}) for op in _overloads(torch_op)))


def _overloads(torch_op: Any) -> list[Any]:
    """An OpOverloadPacket means all its overloads (the public API only accepts OpOverloads)."""
    if isinstance(torch_op, torch._ops.OpOverloadPacket):
        return [getattr(torch_op, name) for name in torch_op.overloads()]
    return [torch_op]


def validate_custom_table(table: Any) -> list[str]:
    """Problems with a user's custom translation table, as messages (empty: fine)."""
    if not isinstance(table, dict):
        return [f"the custom translation table must be a dict (torch op -> onnxscript function), got {type(table).__name__}"]
    problems = []
    for torch_op, function in table.items():
        if not isinstance(torch_op, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)) and not callable(torch_op):
            problems.append(f"key {torch_op!r} is not a torch op")
        if not callable(function) or isinstance(function, (list, tuple)):
            problems.append(f"the translation of {torch_op} must be one onnxscript function, got {type(function).__name__}")
    return problems

