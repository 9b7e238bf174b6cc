"""Verification: run the ONNX model with onnxruntime on the example inputs and compare with torch.

    __init__.py    verify(): the outputs compared, a `VerificationSummary` (exporter/types.py)
    runtime.py     onnxruntime sessions; inputs matched through the program's signature
    compare.py     one value against another, elementwise, as torch.isclose
    divergence.py  the FIRST intermediate value past tolerance, with one onnxruntime session
    findings.py    the `mismatch` finding on the user's line, named by module path
    verdict.py     on a mismatch, that op alone on torch's own inputs: a wrong op, or drift
    profiling.py   onnxruntime's profiler on the verification run (the target's `profile`)

On a mismatch, the first diverging value is found with one onnxruntime session (every FX-named
ONNX value added as an extra graph output, one run) and one torch.fx.Interpreter run over the
exported program that stops at the first value past tolerance. The stock
`verify_onnx_program(compare_intermediates=True)` builds one session per value instead (~130 s
on a 6-block encoder; this takes well under a second).

Never raises: odd models (no tensor outputs, ints, bools, empty tensors, inputs that do not
fit) give a summary saying what was and was not compared.
"""

from __future__ import annotations

import time
from typing import Any

from onnxlens.exporter.locations import Workspace
from onnxlens.exporter.types import Finding, Location, OutputComparison, VerificationSummary
from onnxlens.exporter.verify.divergence import Divergence, first_line


def verify(exported_program: Any, onnx_program: Any, args: tuple, kwargs: dict, *,
           rtol: float = 1e-3, atol: float = 1e-5, root: str | None = None,
           workspace: Workspace | None = None, fallback: Location | None = None,
           other_sizes: bool = False, profiler: Any = None) -> tuple[VerificationSummary, list[Finding]]:
    """Compare onnxruntime with torch on (args, kwargs).

    Returns the summary and, on a mismatch, one `mismatch` Finding on the source line of the
    FIRST intermediate value past tolerance (found with a single onnxruntime session), naming
    its module path. `exported_program` is the torch.export ExportedProgram the ONNX model was
    built from (after decomposition; None: `onnx_program.exported_program`), `onnx_program` the
    torch.onnx.ONNXProgram. The finding lands on the innermost frame of the `workspace` (or of
    the workspace at `root`; with neither, the innermost frame outside installed libraries);
    without such a frame, at `fallback` (the model's definition), the library frames related.

    `other_sizes`: the second-shape check (second_shape.py): `exported_program` is the captured
    program (a decomposition may have read the example's sizes), the inputs have other sizes,
    and a value of another shape than torch's is a difference (divergence.py).

    `profiler` (profiling.py: Profiler): onnxruntime's profiler on the run that gives the outputs;
    what it recorded is in `profiler.profile` afterwards.
    """
    start = time.perf_counter()
    summary = VerificationSummary(rtol=rtol, atol=atol)
    findings: list[Finding] = []
    if workspace is None and root is not None:
        workspace = Workspace(root)
    try:
        findings = _Verification(exported_program, onnx_program, args, kwargs or {}, summary=summary,
                                 workspace=workspace, fallback=fallback, other_sizes=other_sizes,
                                 profiler=profiler).run()
    except Exception as error:  # noqa: BLE001 - a verification bug must not fail the export
        summary.passed = False
        summary.error = f"verification could not run: {type(error).__name__}: {error}"
    summary.seconds = round(time.perf_counter() - start, 4)
    return summary, findings


class _Verification:
    def __init__(self, exported_program, onnx_program, args, kwargs, *, summary: VerificationSummary,
                 workspace: Workspace | None, fallback: Location | None, other_sizes: bool = False,
                 profiler: Any = None):
        self.program = exported_program if exported_program is not None else getattr(
            onnx_program, "exported_program", None)
        self.onnx_program = onnx_program
        self.args, self.kwargs = tuple(args or ()), kwargs
        self.summary = summary
        self.workspace = workspace
        self.fallback = fallback
        self.other_sizes = other_sizes
        self.profiler = profiler

    def run(self) -> list[Finding]:
        import torch

        from onnxlens.exporter.torch_internals.active import internals
        from onnxlens.exporter.verify import compare, divergence, findings, runtime, verdict

        summary = self.summary
        if self.program is None or getattr(self.onnx_program, "model", None) is None:
            summary.passed, summary.error = False, "nothing to verify: no exported program or ONNX model"
            return []
        model = self.onnx_program.model
        try:
            feeds = runtime.ort_feeds(model, runtime.user_inputs(self.program, self.args, self.kwargs))
            graph_inputs = internals.graph_module_inputs(self.program, self.args, self.kwargs)
        except runtime.RuntimeProblem as problem:
            summary.passed, summary.error = False, str(problem)
            return []

        with torch.no_grad():
            torch_outputs = self.program.graph_module(*graph_inputs)
        if not isinstance(torch_outputs, (tuple, list)):
            torch_outputs = (torch_outputs,)
        sessions = runtime.Sessions(model)
        try:
            session = sessions.session(profiler=self.profiler)
            onnx_outputs = runtime.run(session, feeds)
            if self.profiler is not None:
                self.profiler.collect(session)
        except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
            if self.profiler is not None:
                self.profiler.discard()
            message = first_line(error)
            summary.passed, summary.error = False, f"onnxruntime could not run the model: {message}"
            return [findings.runtime_failure_finding(message, self.program, model, self.workspace)]
        del session

        pairs = self._user_output_pairs(torch_outputs)
        onnx_names = [v.name for v in model.graph.outputs]
        failing: list[Divergence] = []
        for index, ((node, expected), actual) in enumerate(zip(pairs, onnx_outputs)):
            name = onnx_names[index] if index < len(onnx_names) else str(index)
            comparison = compare.compare(expected, actual, rtol=summary.rtol, atol=summary.atol)
            summary.outputs.append(OutputComparison(
                name=name, compared=comparison.comparable, passed=comparison.passed,
                max_abs_diff=comparison.max_abs_diff, max_rel_diff=comparison.max_rel_diff,
                dtype=comparison.dtype, shape=list(comparison.shape), note=comparison.note or None,
                nan_mismatches=comparison.nan_mismatches or None))
            if comparison.comparable:
                summary.compared += 1
                summary.max_abs_diff = max(summary.max_abs_diff, comparison.max_abs_diff)
                summary.max_rel_diff = max(summary.max_rel_diff, comparison.max_rel_diff)
            if not comparison.passed:
                failing.append(Divergence(node, None, comparison, True, name))
        if len(pairs) != len(onnx_outputs):
            summary.note = (f"torch gave {len(pairs)} outputs and onnxruntime {len(onnx_outputs)}; "
                            f"compared the first {min(len(pairs), len(onnx_outputs))}")
        if summary.compared == 0 and summary.note is None:
            summary.note = "no tensor outputs to compare"
        summary.passed = not failing
        if not failing:
            return []

        started = time.perf_counter()
        try:
            found, checked = divergence.first_divergence(self.program, model, sessions, feeds, graph_inputs,
                                                         rtol=summary.rtol, atol=summary.atol,
                                                         shapes_differ=self.other_sizes)
            summary.intermediates_compared = checked
            summary.localisation_seconds = round(time.perf_counter() - started, 4)
        except Exception as error:  # noqa: BLE001 - keep the output comparison, locate at the output
            found = None
            summary.localisation_error = f"{type(error).__name__}: {first_line(error)}"
        if found is None:
            found = failing[0]
            if self.other_sizes and found.node is not None:
                # Only an output differs: the nearest op before it the ONNX model has no value of.
                compared = {c.node for c in divergence.candidates(self.program, model)}
                blamed = divergence.nearest_uncompared(found.node, compared)
                if blamed is not None:
                    found = Divergence(blamed, None, found.comparison, False, found.output_name)
        summary.first_mismatch = findings.describe(found)
        finding = findings.mismatch_finding(found, summary, self.workspace, self.fallback)
        if not self.other_sizes:  # (a size fixed in the graph is no op's fault: no verdict)
            verdict.add(summary, finding, found.node, self.program, model, sessions, feeds, graph_inputs)
        return [finding]

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


def _as_sequence(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)
