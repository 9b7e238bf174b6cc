"""Verification: run the ONNX model with onnxruntime on the example inputs and compare with torch.

On a mismatch, find the FIRST intermediate value past tolerance with one onnxruntime session
(every FX-named ONNX value added as an extra graph output, one run) and one torch.fx.Interpreter
run over the exported program that stops at the first value past tolerance. The stock
`verify_onnx_program(compare_intermediates=True)` builds one session per value instead
(~130 s on a 6-block encoder; this takes well under a second).

Never raises: odd models (no tensor outputs, ints, bools, empty tensors, inputs that do not
fit) give a summary saying what was and was not compared.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from onnxlens.exporter.types import Finding

_FX_NODE_META = "pkg.torch.onnx.fx_node"
_FX_NODE_NAME = re.compile(r"^%(\S+) :")


def verify(exported_program: Any, onnx_program: Any, args: tuple, kwargs: dict, *,
           rtol: float = 1e-3, atol: float = 1e-5,
           root: str | None = None) -> tuple[dict[str, Any], list[Finding]]:
    """Compare onnxruntime with torch on (args, kwargs).

    Returns the verification summary {"max_abs_diff", "max_rel_diff", "passed"} (plus details:
    "outputs", "compared", "first_mismatch", "error", "seconds") and, on a mismatch, one
    `mismatch` Finding on the source line of the FIRST intermediate value past tolerance
    (found with a single onnxruntime session), naming its module path.
    `exported_program` is the torch.export ExportedProgram the ONNX model was built from
    (after decomposition; None: `onnx_program.exported_program`), `onnx_program` the
    torch.onnx.ONNXProgram. `root` is the workspace root: the finding lands on the innermost
    frame inside it (None: the innermost frame outside installed libraries).
    """
    start = time.perf_counter()
    summary: dict[str, Any] = {"max_abs_diff": 0.0, "max_rel_diff": 0.0, "passed": True,
                               "rtol": rtol, "atol": atol, "compared": 0, "outputs": []}
    findings: list[Finding] = []
    try:
        findings = _Verification(exported_program, onnx_program, args, kwargs or {},
                                 rtol=rtol, atol=atol, root=root).run(summary)
    except Exception as error:  # noqa: BLE001 - a verification bug must not fail the export
        summary["passed"] = False
        summary["error"] = f"verification could not run: {type(error).__name__}: {error}"
    summary["seconds"] = round(time.perf_counter() - start, 4)
    return summary, findings


@dataclass
class _Candidate:
    """An FX node whose value the ONNX graph computes under a name we can fetch."""

    node: Any  # torch.fx.Node
    value: Any  # onnx_ir.Value
    fetch_name: str


@dataclass
class _Divergence:
    node: Any
    value: Any
    comparison: Any
    is_output: bool = False
    output_name: str = ""


class _Verification:
    def __init__(self, exported_program, onnx_program, args, kwargs, *, rtol, atol, root):
        self.program = exported_program if exported_program is not None else getattr(
            onnx_program, "exported_program", None)
        self.onnx_program = onnx_program
        self.args, self.kwargs = tuple(args or ()), kwargs
        self.rtol, self.atol, self.root = rtol, atol, root

    def run(self, summary: dict[str, Any]) -> list[Finding]:
        import torch

        from onnxlens.exporter import verify_compare, verify_runtime

        if self.program is None or getattr(self.onnx_program, "model", None) is None:
            summary.update(passed=False, error="nothing to verify: no exported program or ONNX model")
            return []
        model = self.onnx_program.model
        try:
            feeds = verify_runtime.ort_feeds(
                model, verify_runtime.user_inputs(self.program, self.args, self.kwargs))
            graph_inputs = self.program._graph_module_flat_inputs(self.args, self.kwargs)
        except verify_runtime.RuntimeProblem as problem:
            summary.update(passed=False, error=str(problem))
            return []

        with torch.no_grad():
            torch_outputs = self.program.graph_module(*graph_inputs)
        if not isinstance(torch_outputs, (tuple, list)):
            torch_outputs = (torch_outputs,)
        self.sessions = verify_runtime.Sessions(model)
        try:
            session = self.sessions.session()
            onnx_outputs = verify_runtime.run(session, feeds)
        except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
            message = _first_line(error)
            summary.update(passed=False, error=f"onnxruntime could not run the model: {message}")
            return [self._runtime_failure_finding(message)]
        del session

        pairs = self._user_output_pairs(torch_outputs)
        onnx_names = [v.name for v in model.graph.outputs]
        failing: list[_Divergence] = []
        for index, ((node, expected), actual) in enumerate(zip(pairs, onnx_outputs)):
            name = onnx_names[index] if index < len(onnx_names) else str(index)
            comparison = verify_compare.compare(expected, actual, rtol=self.rtol, atol=self.atol)
            entry = {"name": name, "compared": comparison.comparable, "passed": comparison.passed,
                     "max_abs_diff": comparison.max_abs_diff,
                     "max_rel_diff": comparison.max_rel_diff,
                     "dtype": comparison.dtype, "shape": list(comparison.shape)}
            if comparison.note:
                entry["note"] = comparison.note
            if comparison.nan_mismatches:
                entry["nan_mismatches"] = comparison.nan_mismatches
            summary["outputs"].append(entry)
            if comparison.comparable:
                summary["compared"] += 1
                summary["max_abs_diff"] = max(summary["max_abs_diff"], comparison.max_abs_diff)
                summary["max_rel_diff"] = max(summary["max_rel_diff"], comparison.max_rel_diff)
            if not comparison.passed:
                failing.append(_Divergence(node, None, comparison, True, name))
        if len(pairs) != len(onnx_outputs):
            summary["note"] = (f"torch gave {len(pairs)} outputs and onnxruntime {len(onnx_outputs)}; "
                               f"compared the first {min(len(pairs), len(onnx_outputs))}")
        if summary["compared"] == 0:
            summary.setdefault("note", "no tensor outputs to compare")
        summary["passed"] = not failing
        if not failing:
            return []

        started = time.perf_counter()
        try:
            divergence, checked = self._first_divergence(model, feeds, graph_inputs)
            summary["intermediates_compared"] = checked
            summary["localisation_seconds"] = round(time.perf_counter() - started, 4)
        except Exception as error:  # noqa: BLE001 - keep the output comparison, locate at the output
            divergence = None
            summary["localisation_error"] = f"{type(error).__name__}: {_first_line(error)}"
        if divergence is None:
            divergence = failing[0]
        summary["first_mismatch"] = self._describe(divergence)
        return [self._mismatch_finding(divergence, summary)]

    def _user_output_pairs(self, torch_outputs) -> list[tuple[Any, Any]]:
        """(producing FX node, torch value) for each ONNX graph output, in order.

        The graph module returns one value per output spec (buffer and input mutations
        first); the exporter makes ONNX outputs of the USER_OUTPUT specs only, skipping
        constants and expanding multi-value outputs.
        """
        from torch.export import graph_signature

        specs = self.program.graph_signature.output_specs
        nodes = {n.name: n for n in self.program.graph.nodes}
        if len(specs) != len(torch_outputs):
            args = _as_sequence(self.program.graph.output_node().args[0])
            return [(a, v) for a, v in zip(args, torch_outputs) if a is not None]
        pairs = []
        for spec, value in zip(specs, torch_outputs):
            if (spec.kind != graph_signature.OutputKind.USER_OUTPUT
                    or isinstance(spec.arg, graph_signature.ConstantArgument)):
                continue
            node = nodes.get(getattr(spec.arg, "name", None))
            pairs.extend((node, v) for v in _as_sequence(value))
        return pairs

    # --- localisation -------------------------------------------------------------------

    def _candidates(self, model) -> list[_Candidate]:
        """FX call_function nodes (in topological order) with an ONNX value to fetch."""
        by_name: dict[str, Any] = {}
        by_meta: dict[str, Any] = {}
        for onnx_node in model.graph:
            for value in onnx_node.outputs:
                if value.name:
                    by_name[value.name] = value
            match = _FX_NODE_META in onnx_node.metadata_props and _FX_NODE_NAME.match(
                onnx_node.metadata_props[_FX_NODE_META])
            if match and onnx_node.outputs:
                # The last ONNX node translated from an FX node produces its value (used when
                # an optimisation renamed it).
                by_meta[match.group(1)] = onnx_node.outputs[0]
        skip = {v.name for v in model.graph.inputs} | set(model.graph.initializers)
        candidates = []
        for node in self.program.graph.nodes:
            if node.op != "call_function":
                continue
            value = by_name.get(node.name) or by_meta.get(node.name)
            if value is None or not value.name or value.name in skip or value.type is None:
                continue  # (onnxruntime needs a type for each graph output)
            candidates.append(_Candidate(node, value, value.name))
        return candidates

    def _first_divergence(self, model, feeds, graph_inputs) -> tuple[_Divergence | None, int]:
        import torch

        from onnxlens.exporter import verify_compare, verify_runtime

        candidates = self._candidates(model)
        if not candidates:
            return None, 0
        outputs = {v.name for v in model.graph.outputs}
        extra, seen = [], set()
        for c in candidates:
            if c.fetch_name not in outputs and c.fetch_name not in seen:
                extra.append(c.value)
                seen.add(c.fetch_name)
        fetch = list(dict.fromkeys(c.fetch_name for c in candidates))
        session = self.sessions.session(extra)
        onnx_values = dict(zip(fetch, verify_runtime.run(session, feeds, fetch)))
        del session
        by_node = {c.node: c for c in candidates}
        rtol, atol = self.rtol, self.atol
        state = {"checked": 0, "found": None}

        class _Stop(Exception):
            pass

        class FirstDivergence(torch.fx.Interpreter):
            def run_node(self, node):
                result = super().run_node(node)
                candidate = by_node.get(node)
                if candidate is not None:
                    actual = onnx_values.pop(candidate.fetch_name, None)
                    comparison = verify_compare.compare(result, actual, rtol=rtol, atol=atol)
                    if comparison.comparable:  # a differently shaped value is another thing
                        state["checked"] += 1
                        if not comparison.passed:
                            state["found"] = _Divergence(node, candidate.value, comparison)
                            raise _Stop
                return result

        with torch.no_grad():
            try:
                FirstDivergence(self.program.graph_module).run(*graph_inputs)
            except _Stop:
                pass
        return state["found"], state["checked"]

    # --- findings -----------------------------------------------------------------------

    def _describe(self, divergence: _Divergence) -> dict[str, Any]:
        from onnxlens.exporter.verify_locate import module_stack

        node = divergence.node
        modules = module_stack(getattr(node, "meta", {}) or {})
        return {
            "node": getattr(node, "name", str(node)),
            "target": _target_name(node),
            "onnx_op": _onnx_op(divergence.value),
            "module": modules[-1][0] if modules else None,
            "output": divergence.output_name or None,
            "max_abs_diff": divergence.comparison.max_abs_diff,
            "max_rel_diff": divergence.comparison.max_rel_diff,
        }

    def _mismatch_finding(self, divergence: _Divergence, summary: dict[str, Any]) -> Finding:
        from onnxlens.exporter.verify_locate import locate_node_meta

        node = divergence.node
        place = locate_node_meta(_traced_meta(node), self.root)
        comparison = divergence.comparison
        if place.module_path:
            where = f"module `{place.module_path}` ({(place.module_class or '?').rsplit('.', 1)[-1]})"
        else:
            where = "the top-level module"
        what = f"FX node `{node.name}` ({_target_name(node)})" if node is not None else "an output"
        onnx_op = _onnx_op(divergence.value)
        if onnx_op:
            what += f" -> ONNX {onnx_op}"
        if comparison.comparable:
            diff = (f"max abs diff {comparison.max_abs_diff:.3g}, "
                    f"max rel diff {comparison.max_rel_diff:.3g}")
            if comparison.nan_mismatches:
                diff += f", {comparison.nan_mismatches} NaN/inf on one side only"
        else:
            diff = comparison.note
        tolerance = f"rtol={self.rtol:g}, atol={self.atol:g}"
        if divergence.is_output:
            message = (f"onnxruntime and torch differ at output `{divergence.output_name}` of "
                       f"{where}, {what}: {diff} ({tolerance}); no intermediate value was past "
                       f"tolerance before it")
        else:
            message = (f"onnxruntime and torch differ first in {where}, {what}: {diff} "
                       f"({tolerance}); the outputs differ by up to "
                       f"{summary['max_abs_diff']:.3g}")
        return Finding(code="mismatch", severity="warning", stage="verify", message=message,
                       location=place.location, related=place.related,
                       source_line=place.source_line)

    def _runtime_failure_finding(self, message: str) -> Finding:
        """onnxruntime refused the model: put it on the line of the node it names, if any."""
        from onnxlens.exporter.verify_locate import locate_node_meta

        location, related, source_line = None, [], None
        # onnxruntime names the node as "Name:'node_view'" (kernel errors), "Node (x)" or
        # "node with name 'x'" (no kernel for the type).
        match = re.search(r"Name:'([^']+)'|[Nn]ode \(([^)]+)\)|node with name '([^']+)'", message)
        if match:
            node_name = next(group for group in match.groups() if group)
            for onnx_node in self.onnx_program.model.graph:
                if onnx_node.name == node_name:
                    fx_name = _FX_NODE_NAME.match(onnx_node.metadata_props.get(_FX_NODE_META, ""))
                    fx_node = next((n for n in self.program.graph.nodes
                                    if fx_name and n.name == fx_name.group(1)), None)
                    if fx_node is not None:
                        place = locate_node_meta(fx_node.meta, self.root)
                        location, related = place.location, place.related
                        source_line = place.source_line
                    break
        return Finding(code="mismatch", severity="warning", stage="verify",
                       message=f"onnxruntime could not run the exported model: {message}",
                       location=location, related=related, source_line=source_line)


def _traced_meta(node: Any) -> dict:
    """The node's metadata, or that of the nearest node with a stack trace: nodes a
    decomposition or a pass added may have none (their inputs, then their users, are the
    closest user code)."""
    meta = getattr(node, "meta", None) or {}
    if meta.get("stack_trace") or not hasattr(node, "all_input_nodes"):
        return meta
    for neighbours in (lambda n: n.all_input_nodes, lambda n: list(n.users)):
        seen, frontier = {node}, [node]
        while frontier:
            following = []
            for current in frontier:
                for other in neighbours(current):
                    if other in seen:
                        continue
                    if other.meta.get("stack_trace"):
                        return {**other.meta, "nn_module_stack": meta.get(
                            "nn_module_stack", other.meta.get("nn_module_stack"))}
                    seen.add(other)
                    following.append(other)
            frontier = following
    return meta


def _as_sequence(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _target_name(node: Any) -> str:
    target = getattr(node, "target", None)
    return str(target).removeprefix("aten::") if target is not None else "?"


def _onnx_op(value: Any) -> str | None:
    producer = value.producer() if value is not None else None
    if producer is None:
        return None
    return f"{producer.domain}::{producer.op_type}" if producer.domain else producer.op_type


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0][:500]

