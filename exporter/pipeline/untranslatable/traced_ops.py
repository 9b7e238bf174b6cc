"""Ops without an ONNX translation, found while capture traces them: the first diagnostic of a
deep model comes after its first block was traced, not after the whole model was captured,
decomposed and scanned.

The scan (stages/scan.py) dispatches the nodes of the *decomposed* program; on a model of 32 identical
blocks with a bad op in the block, that is after capture and decomposition of all 32. But an op
that cannot be translated is usually known to be hopeless the moment the tracer records it in
the first block. While the capture stage runs, every op node torch's tracer creates is checked,
and each op certainly without a translation becomes, at once, a preliminary finding of the scan
(`Job.report_preliminary`: a FindingsEvent the editor shows while the export goes on), made by
the scan's own finding writer (op_findings.py) from the node's call chain, so it lands on the
line the scan will report. The scan still decides: its findings replace the preliminary ones.

Where: `torch.fx.proxy.TracerBase.create_proxy`, the method torch's tracers create op nodes
through (make_fx's `proxy_call`: non-strict capture and the AOT part of strict capture), is
wrapped for the duration of the capture stage. The wrapper looks at the node after the stock
method has built it (stack trace with the helper frames stacks.py keeps, `torch_fn`, module
stack) and changes nothing: the graph, its metadata and the guards are the stock ones
(tests/exporter/test_pipeline_identity.py). A failure of the check turns the check off for the
rest of the job and is logged; it never reaches the export.

"Certainly without a translation" (`OpVerdicts`), with the job's own registry and tables:
* the registry has no translation of the op at all (`get_decomps`, the lookup dispatching starts
  with; custom translations included), and it is no ONNX op;
* the decompose stage keeps the op as it is: it is not in the decomposition tables (the python
  table; the CIA table unless it preserves the op) and has no CompositeImplicitAutograd kernel;
* it returns something and mutates nothing (torch's passes drop the assertion ops, which return
  nothing; functionalization replaces mutating ops).
An op the decompose stage replaces (torch.linalg.svd's `aten.linalg_svd` -> `aten._linalg_svd`,
torch.special.zeta's `aten.special_zeta` -> `prims.zeta`) is followed: its decomposition runs on
meta tensors of the node's sizes, with the same tables, and the ops it ends in are judged by the
same rule (`ops_after_decomposition`). The whole check runs outside the trace (the tracer's
dispatch modes set aside, torch-function handling off) and the decompositions on plain meta
tensors built from size hints, never on the node's fake values: no tracer, fake mode, shape
environment or counter sees what it does, and no guard is added (~0.5 ms per op and input
signature, once per job). The tracer calls the check while the op's fresh data-dependent sizes
are still pending in the shape environment; a decomposition run on fake values there adds sizes
of its own, which renames the exported sizes and makes torch fail models it exports
(`PendingUnbackedSymbolNotFound` on torchvision's detection models).

Not reported early (the scan reports them, with their lines): ops in torch.cond / while_loop
bodies (traced through generated code: the scan re-captures strictly to find their line), ops
whose translation depends on complex inputs, higher-order ops, Python functions on sizes.
Reported early but not confirmed (the result replaces them): an op whose value is unused
(capture drops it), an op traced before capture fails on a later line.

Cost on models without problems: a dict lookup per node; on the example encoder (270 nodes)
2.7 ms of a ~0.9 s capture, within the noise (capture CPU time, medians of 21 interleaved runs:
0.95 s without the check, 0.90 s with). Benefit, on the issue's model (32 identical blocks,
d=1024, meta device, a helper in the block with an op without translation), through a warm
worker: the preliminary finding 0.3-0.4 s after the export call, the scan's 2.8-3.4 s, stock
raising after 3.6-4.2 s, 9-14x later (medians; the table is in tests/exporter/test_early_findings.py).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Iterator

import torch

from onnxlens.exporter.locations import primary_frame
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.untranslatable.op_findings import UnsupportedOp, findings_for, in_branch, unsupported_op
from onnxlens.exporter.torch_internals.active import internals

# The stage whose findings these are: the scan decides, with the decomposed program.
DECIDING_STAGE = "scan"

_TRANSLATED, _DECOMPOSED, _MISSING, _UNKNOWN = "translated", "decomposed", "missing", "unknown"
_MAX_DEPTH = 8  # decompositions inside decompositions followed at most this deep


class OpVerdicts:
    """What becomes of an op in the rest of the export, for one job's registry and tables:
    translated, decomposed (into what, by which function), missing (certainly reaches the scan
    without a translation), or unknown (mutating, returning nothing: not ours to judge)."""

    def __init__(self, registry: Any, python_table: dict, cia_table: dict) -> None:
        self._registry = registry
        self._python = python_table
        self._cia = cia_table
        self._verdicts: dict[Any, tuple[str, Callable | None]] = {}

    def verdict(self, op: Any) -> tuple[str, Callable | None]:
        """For an OpOverload."""
        known = self._verdicts.get(op)
        if known is None:
            known = self._verdicts[op] = self._judge(op)
        return known

    def _judge(self, op: Any) -> tuple[str, Callable | None]:
        if internals.is_onnx_op(op) or self._registry.get_decomps(op):
            return _TRANSLATED, None
        if not internals.returns_without_mutating(op):
            return _UNKNOWN, None
        decomposition = self._python.get(op) or self._cia.get(op)
        if internals.keeps_op(decomposition):
            return _MISSING, None  # the CIA table keeps it as it is
        if decomposition is None:
            decomposition = internals.composite_implicit_decomposition(op)
        if decomposition is not None:
            return _DECOMPOSED, decomposition
        return _MISSING, None


def ops_after_decomposition(verdicts: OpVerdicts, decomposition: Callable, args: tuple,
                            kwargs: dict) -> list[Any]:
    """The ops (OpOverloads) without a translation an op's `decomposition` ends in, run on `args`
    and `kwargs` (meta tensors and plain values)."""

    class Recorder(internals.dispatch_mode_base()):  # type: ignore[misc]
        """Sees every op the decomposition calls; decomposes further what the tables would."""

        def __init__(self) -> None:
            super().__init__()
            self.missing: list[Any] = []
            self.depth = 0

        def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
            kwargs = kwargs or {}
            kind, inner = verdicts.verdict(func) if internals.is_op_overload(func) else (_UNKNOWN, None)
            if kind == _DECOMPOSED and self.depth < _MAX_DEPTH:
                self.depth += 1
                try:
                    with self:
                        out = inner(*args, **kwargs)
                finally:
                    self.depth -= 1
                if out is not NotImplemented:
                    return out
            elif kind == _MISSING and func not in self.missing:
                self.missing.append(func)
            return func(*args, **kwargs)

    recorder = Recorder()
    with recorder:
        decomposition(*args, **kwargs)
    return recorder.missing


class _NoHint(Exception):
    """A size without a hint (an unbacked symbol): the decomposition cannot be run on it."""


def _meta(value: Any) -> Any:
    """A node argument as a plain value: tensors as meta tensors of the same dtype and (hinted)
    sizes, symbolic numbers as their hints. Reads hints only: no guard is added."""
    import torch.fx

    if isinstance(value, torch.fx.Node):
        if "val" not in value.meta:
            raise _NoHint(value.name)
        value = value.meta["val"]
    if isinstance(value, torch.Tensor):
        return torch.empty([_hint(size) for size in value.shape], dtype=value.dtype, device="meta")
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return _hint(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_meta(item) for item in value)
    if isinstance(value, dict):
        return {key: _meta(item) for key, item in value.items()}
    return value


def _hint(value: Any) -> Any:
    if not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value
    hint = internals.size_hint(value)
    if hint is None:
        raise _NoHint(str(value))
    return hint


def _signature(value: Any) -> Any:
    """A hashable description of meta arguments: what the decomposition's result depends on."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, tuple(value.shape))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, *(_signature(item) for item in value))
    if isinstance(value, dict):
        return ("dict", *((key, _signature(item)) for key, item in sorted(value.items())))
    return (type(value).__name__, repr(value))


class TracedOpCheck:
    """Checks each op node as capture creates it; reports the ones certainly without a
    translation as preliminary findings of the scan, once per op and line."""

    def __init__(self, job: Job) -> None:
        tables = job.tables.decompositions(job.registry, job.custom_key)
        self._job = job
        self._verdicts = OpVerdicts(job.registry, tables.python_decomp_table, tables.cia_to_decomp)
        self._decomposed: dict[Any, list[Any]] = {}  # (op, signature) -> missing ops
        self._found: list[UnsupportedOp] = []
        self._seen: set[tuple[str, str, int]] = set()  # (op, file, line) reported
        self.active = True

    def check(self, node: Any) -> None:
        """One new node. Never raises: a failure turns the check off for the rest of the job."""
        if not self.active:
            return
        self.active = False  # no re-entry while we work; back on unless we fail
        try:
            # The tracer calls us between running an op on fake tensors and binding its result
            # (make_fx's proxy_call): the fake mode and its shape environment are live, with the
            # op's fresh unbacked symbols pending. Nothing here may reach them: no mode sees what
            # runs inside, and the decompositions run on plain meta tensors (_meta), never on the
            # node's fake values, which would dispatch to their own fake mode and add symbols.
            with internals.outside_tracing():
                self._check(node)
            self.active = True
        except Exception as error:  # noqa: BLE001 - a broken check must never break the export
            self._job.log(f"checking ops while tracing stopped (the scan still checks every op): "
                          f"{type(error).__name__}: {error}")

    def _check(self, node: Any) -> None:
        target = getattr(node, "target", None)
        if not internals.is_op_overload(target) or node.op != "call_function":
            return
        kind, decomposition = self._verdicts.verdict(target)
        if kind == _TRANSLATED or kind == _UNKNOWN:
            return  # the common case: a dict lookup per node
        missing = [target] if kind == _MISSING else self._missing_after_decomposition(node, decomposition)
        if missing:
            self._report(node, missing)

    def _missing_after_decomposition(self, node: Any, decomposition: Callable) -> list[Any]:
        try:
            args, kwargs = _meta(tuple(node.args)), _meta(dict(node.kwargs))
        except _NoHint:
            return []
        key = (node.target, _signature(args), _signature(kwargs))
        missing = self._decomposed.get(key)
        if missing is None:
            try:
                missing = ops_after_decomposition(self._verdicts, decomposition, args, kwargs)
            except Exception:  # noqa: BLE001 - no meta kernel, a decomposition that needs more: unknown
                missing = []
            self._decomposed[key] = missing
        return missing

    def _report(self, node: Any, missing: list[Any]) -> None:
        job = self._job
        _, reason = internals.dispatch(node, job.registry)
        added = False
        for op in missing:
            unsupported = unsupported_op(node, reason, op)
            if in_branch(unsupported):
                continue  # the scan finds its line
            innermost = primary_frame(unsupported.frames, job.workspace)
            place = (unsupported.op, os.path.realpath(innermost.file), innermost.line) if innermost else (
                unsupported.op, "", 0)
            if place in self._seen:
                continue
            self._seen.add(place)
            self._found.append(unsupported)
            added = True
        if added:
            job.report_preliminary(DECIDING_STAGE, findings_for(self._found, job.workspace, job.fallback))


@contextlib.contextmanager
def ops_checked_while_traced(job: Job) -> Iterator[TracedOpCheck | None]:
    """While active, every op node torch's tracers create is checked (see the module docstring).
    Yields the check, or None when it could not be set up (the export goes on without it)."""
    try:
        check = TracedOpCheck(job)
    except Exception as error:  # noqa: BLE001 - the export goes on; the scan checks every op
        job.log(f"ops are not checked while tracing: {type(error).__name__}: {error}")
        yield None
        return
    with internals.nodes_observed(check.check):
        yield check
