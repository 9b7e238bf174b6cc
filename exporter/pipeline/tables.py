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
with the set of torchlib ops that existed when it was built (`available_torchlib_ops`: ~1 ms
to compute, asked at every job and after library preloading), and rebuilt when that set
changed: then it holds exactly what a stock registry built at that moment would.

Custom translations mutate a registry: each job gets its own copy of the cached one, so an
in-process job never leaks its registrations into the next.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any

import torch
from torch.export import exported_program as _exported_program
from torch.onnx._internal.exporter import _constants, _decomp, _registration

from onnxlens.exporter.pipeline.cia_override import RecordedOverride

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
    # torch's CIA override recorded for `cia_to_decomp` (cia_override.py): tables built by
    # refresh() (the zygote's) have it; None: decomposition enters torch's own.
    recorded_override: RecordedOverride | None = None


def registry_opset(opset: int) -> int:
    """As the public API: below torchlib's own opset, build at torchlib's and convert later."""
    return max(opset, _constants.TORCHLIB_OPSET)


@dataclass
class BuiltRegistry:
    registry: _registration.ONNXRegistry
    available: frozenset[str]  # available_torchlib_ops() when it was built


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

    def registry(self, opset: int, custom: dict | None = None) -> _registration.ONNXRegistry:
        """A private copy of the registry for `opset` as the public API would build it now, with
        `custom` translations added."""
        base = self._current(registry_opset(opset)).registry
        copy = _registration.ONNXRegistry()
        copy._opset_version = base._opset_version
        copy.functions = {key: list(metas) for key, metas in base.functions.items()}
        for torch_op, function in (custom or {}).items():
            for overload in _overloads(torch_op):
                copy.register_op(overload, function, is_complex=False)
        return copy

    def refresh(self) -> None:
        """Bring every table built so far up to date with the ops torch knows now (after the
        zygote imported libraries: its children then find them current)."""
        for build_opset in list(self._registries):
            self.decompositions(self._current(build_opset).registry, record_override=True)

    def _current(self, build_opset: int) -> BuiltRegistry:
        """The cached registry for `build_opset`, rebuilt if torchlib ops appeared or went since."""
        available = available_torchlib_ops()
        built = self._registries.get(build_opset)
        if built is not None and built.available == available:
            return built
        started = time.perf_counter()
        fresh = BuiltRegistry(_registration.ONNXRegistry.from_torchlib(opset_version=build_opset), available)
        self._registries[build_opset] = fresh
        if built is not None:
            self.rebuilds.append(Rebuild(build_opset, sorted(available - built.available),
                                         sorted(built.available - available), time.perf_counter() - started))
        return fresh

    def decompositions(self, registry: _registration.ONNXRegistry, custom_key: tuple = (),
                       record_override: bool = False) -> DecompositionTables:
        """Fresh dicts (run_decompositions may mutate them) of the cached tables. With
        `record_override`, torch's CIA override is recorded for them too (~60 ms: worth it in the
        zygote, whose children all decompose with these tables; not in a child, which
        decomposes once)."""
        built = self._registries.get(registry.opset_version)
        available = built.available if built is not None else None
        key = (registry.opset_version, custom_key, tuple(sorted(torch.ops._dir)), available)
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
        if record_override and (tables.recorded_override is None
                                or not tables.recorded_override.matches(tables.cia_to_decomp)):
            tables.recorded_override = RecordedOverride.record(tables.cia_to_decomp)
        return DecompositionTables(dict(tables.cia_to_decomp), dict(tables.python_decomp_table),
                                   tables.recorded_override)


@functools.lru_cache(maxsize=1)
def _torchlib_names() -> tuple[str, ...]:
    """The torch ops onnxscript's torchlib translates, by qualified name (fixed per process)."""
    from torch.onnx._internal._lazy_import import onnxscript_apis

    return tuple(sorted({meta.qualified_name for meta in onnxscript_apis.get_torchlib_ops()}))


def available_torchlib_ops() -> frozenset[str]:
    """The torchlib ops `ONNXRegistry.from_torchlib()` would find now, asked with its own
    lookup (`_get_overload`: torchvision's ops also need torchvision to be importable)."""
    logger = _registration.logger
    silenced = logger.disabled  # its "torchvision is not installed" warnings, once per op per call
    logger.disabled = True
    try:
        return frozenset(name for name in _torchlib_names() if _registration._get_overload(name) is not None)
    finally:
        logger.disabled = silenced


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

