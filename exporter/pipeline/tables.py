"""The exporter's lookup tables, built once per process and reused by every job.

The public `torch.onnx.export` rebuilds the ONNX registry (~0.3 s), the ONNX-friendly
decomposition table (~0.035 s) and the set of CompositeImplicitAutograd ops
(~0.035 s) on every call: most of a warm export of a small model. They only depend on the
opset, on the registered translations and on the op namespaces torch knows (`torch.ops._dir`:
a user's `torch.library.custom_op` adds one), so they are cached under those keys.

Which translations the registry holds also depends on the moment it is built:
`ONNXRegistry.from_torchlib()` skips every torchlib translation whose torch op does not exist
yet, and libraries register ops when they are imported (`import torchvision` registers
`torchvision::roi_align`, `nms`, ...; torch's own `torch.ao.quantization.fx._decomposed`
registers `quantized_decomposed::*`). The stock exporter builds its registry at each call,
after the user's imports; ours is built in the zygote before any. So each registry is kept
with the set of torchlib ops that existed when it was built (`internals.torchlib_ops_available`: ~1 ms
to compute, asked at every job and after library preloading), and rebuilt when that set
changed: then it holds exactly what a stock registry built at that moment would.

Custom translations mutate a registry: each job gets its own copy of the cached one, so an
in-process job never leaks its registrations into the next.

torch's pieces come from the adapter of its internals (torch_internals/). On the public path (a
torch without an adapter) no table is built: `torch.onnx.export` builds its own.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from onnxlens.exporter.torch_internals.active import internals

if TYPE_CHECKING:
    from onnxlens.exporter.torch_internals.cia_override import RecordedOverride

# The opset the public API targets when none is given (torch.onnx.export(dynamo=True)).
DEFAULT_OPSET = internals.DEFAULT_OPSET


@dataclass
class DecompositionTables:
    """run_decompositions' inputs, split once the way ExportedProgram.run_decompositions does."""

    cia_to_decomp: dict
    python_decomp_table: dict
    # torch's CIA override recorded for `cia_to_decomp` (cia_override.py): tables built by
    # refresh() (the zygote's) have it; None: decomposition enters torch's own.
    recorded_override: RecordedOverride | None = None


def registry_opset(opset: int) -> int:
    """As the public API: below torchlib's own opset, build at torchlib's and convert later."""
    return max(opset, internals.TORCHLIB_OPSET)


@dataclass
class BuiltRegistry:
    registry: Any  # torch.onnx's ONNXRegistry
    available: frozenset[str]  # internals.torchlib_ops_available() when it was built


@dataclass
class Rebuild:
    """A cached registry rebuilt because the torchlib ops torch knows changed (for the log)."""

    opset: int
    appeared: list[str]
    gone: list[str]
    seconds: float

    def describe(self) -> str:
        changes = [f"{', '.join(names)} {verb}" for names, verb in
                   ((self.appeared, "appeared"), (self.gone, "went")) if names]
        return (f"ONNX registry (opset {self.opset}) rebuilt in {self.seconds:.2f} s, as the public API "
                f"would build it now: torch ops with torchlib translations {'; '.join(changes)}")


class Tables:
    def __init__(self) -> None:
        self._registries: dict[int, BuiltRegistry] = {}
        self._decompositions: dict[tuple, DecompositionTables] = {}
        self.rebuilds: list[Rebuild] = []  # of registries built before (not the first builds)

    def registry(self, opset: int, custom: dict | None = None) -> Any:
        """A private copy of the registry for `opset` as the public API would build it now, with
        `custom` translations added."""
        copy = internals.copy_registry(self._current(registry_opset(opset)).registry)
        for torch_op, function in (custom or {}).items():
            for overload in internals.overloads(torch_op):
                internals.register_translation(copy, overload, function)
        return copy

    def refresh(self) -> None:
        """Bring every table built so far up to date with the ops torch knows now (after the
        zygote imported libraries: its children then find them current)."""
        for build_opset in list(self._registries):
            self.decompositions(self._current(build_opset).registry, record_override=True)

    def _current(self, build_opset: int) -> BuiltRegistry:
        """The cached registry for `build_opset`, rebuilt if torchlib ops appeared or went since."""
        available = internals.torchlib_ops_available()
        built = self._registries.get(build_opset)
        if built is not None and built.available == available:
            return built
        started = time.perf_counter()
        fresh = BuiltRegistry(internals.build_registry(build_opset), available)
        self._registries[build_opset] = fresh
        if built is not None:
            self.rebuilds.append(Rebuild(build_opset, sorted(available - built.available),
                                         sorted(built.available - available), time.perf_counter() - started))
        return fresh

    def decompositions(self, registry: Any, custom_key: tuple = (),
                       record_override: bool = False) -> DecompositionTables:
        """Fresh dicts (run_decompositions may mutate them) of the cached tables. With
        `record_override`, torch's CIA override is recorded for them too (~60 ms: worth it in the
        zygote, whose children all decompose with these tables; not in a child, which
        decomposes once)."""
        built = self._registries.get(registry.opset_version)
        available = built.available if built is not None else None
        key = (registry.opset_version, custom_key, internals.op_namespaces(), available)
        tables = self._decompositions.get(key)
        if tables is None:
            tables = DecompositionTables(*internals.decomposition_tables(registry))
            # Namespaces only grow: tables for an older set of them are never asked for again.
            for old in [k for k in self._decompositions if k[:2] == key[:2]]:
                del self._decompositions[old]
            self._decompositions[key] = tables
        if record_override and (tables.recorded_override is None
                                or not tables.recorded_override.matches(tables.cia_to_decomp)):
            tables.recorded_override = internals.record_cia_override(tables.cia_to_decomp)
        return DecompositionTables(dict(tables.cia_to_decomp), dict(tables.python_decomp_table),
                                   tables.recorded_override)


def custom_table_key(custom: dict | None) -> tuple:
    """The decomposition table depends on which ops have translations, not on the functions."""
    return tuple(sorted(str(op) for torch_op in (custom or {}) for op in internals.overloads(torch_op)))


def validate_custom_table(table: Any) -> list[str]:
    """Problems with a user's custom translation table, as messages (empty: fine)."""
    if not isinstance(table, dict):
        return [f"the custom translation table must be a dict (torch op -> onnxscript function), got {type(table).__name__}"]
    problems = []
    for torch_op, function in table.items():
        if not internals.is_torch_op(torch_op) and not callable(torch_op):
            problems.append(f"key {torch_op!r} is not a torch op")
        if not callable(function) or isinstance(function, (list, tuple)):
            problems.append(f"the translation of {torch_op} must be one onnxscript function, got {type(function).__name__}")
    return problems

