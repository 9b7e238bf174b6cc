"""Verification: run the ONNX model with onnxruntime on the example inputs and compare with torch.

    __init__.py    verify(): the outputs compared, a `VerificationSummary` (exporter/types.py)
    tolerance.py   how far the two may be apart: by dtype, with a noise floor at the value's scale
    runtime.py     onnxruntime sessions and the torch run; inputs matched through the program's signature
    compare.py     one value against another, elementwise, within the tolerance
    divergence.py  the FIRST intermediate value past tolerance, with one onnxruntime session
    findings.py    the `mismatch` finding on the user's line, named by module path (in the
                   user's custom translation of its op); the `verification` finding of a
                   verification that could not run; `baked-shape` at other sizes
    onnx_nodes.py  ONNX nodes named by onnx.checker / onnxruntime: op, types, FX node and line
    verdict.py     on a mismatch, that op alone on torch's own inputs: a wrong op, or drift
    second_shape.py  other sizes for the dynamic dimensions (the pipeline's second-shape check)
    small_inputs.py  the example cut along its dynamic dimensions (`verify-inputs = "small"`)
    profiling.py   onnxruntime's profiler on the verification run (the target's `profile`)
    reuse.py       an unchanged passing verification kept (signed), not run again
    runs.py        one export's runs: the example inputs (profiled), smaller ones, other sizes

On a mismatch, the first diverging value is found with one onnxruntime session (every FX-named
ONNX value added as an extra graph output, one run) and one torch.fx.Interpreter run over the
exported program that stops at the first value past tolerance. The stock
`verify_onnx_program(compare_intermediates=True)` builds one session per value instead (~130 s
on a 6-block encoder; this takes well under a second).

Never raises. A verification that cannot run is a finding, never silence: torch raising on the
example inputs (out of memory, say) is a `verification` warning on the line of the FX node it
was running; onnxruntime refusing or failing the model, on the line of the ONNX node it names;
inputs that do not fit the model, at the model's definition. Odd models (no tensor outputs,
ints, bools, empty tensors) give a summary saying what was and was not compared.
"""

from __future__ import annotations

import time
from typing import Any

from onnxlens.exporter.locations import Workspace
from onnxlens.exporter.types import Finding, Location, OutputComparison, VerificationSummary
from onnxlens.exporter.verify.divergence import Divergence, first_line
from onnxlens.exporter.verify.tolerance import Tolerance


def verify(exported_program: Any, onnx_program: Any, args: tuple, kwargs: dict, *,
           tolerance: Tolerance = Tolerance(), root: str | None = None,
           workspace: Workspace | None = None, fallback: Location | None = None,
           other_sizes: bool = False, sessions: Any = None, translated: Any = None,
           profiler: Any = None) -> tuple[VerificationSummary, list[Finding]]:
    """Compare onnxruntime with torch on (args, kwargs).

    Returns the summary and, on a mismatch, one `mismatch` Finding on the source line of the
    FIRST intermediate value past tolerance (found with a single onnxruntime session), naming
    its module path; when the verification could not run, one `verification` Finding saying
    why, where. `exported_program` is the torch.export ExportedProgram the ONNX model was
    built from (after decomposition; None: `onnx_program.exported_program`), `onnx_program` the
    torch.onnx.ONNXProgram. The finding lands on the innermost frame of the `workspace` (or of
    the workspace at `root`; with neither, the innermost frame outside installed libraries);
    without such a frame, at `fallback` (the model's definition), the library frames related.

    `other_sizes`: the second-shape check (second_shape.py): `exported_program` is the captured
    program (a decomposition may have read the example's sizes), the inputs have other sizes,
    and a value of another shape than torch's is a difference (divergence.py).
    `sessions`: a runtime.Sessions of the same model to reuse (its serialized graph and weights).
    `translated`: the program the ONNX model was translated from, when `exported_program` is
    another one (the captured program of the second shape): the ONNX nodes name its nodes.
    `profiler` (profiling.py: Profiler): onnxruntime's profiler on the run that gives the outputs
    (a session of its own, not the shared plain one); what it recorded is in `profiler.profile`
    afterwards.
    """
    start = time.perf_counter()
    summary = VerificationSummary(rtol=tolerance.rtol, atol=tolerance.atol)
    findings: list[Finding] = []
    if workspace is None and root is not None:
        workspace = Workspace(root)
    try:
        findings = _Verification(exported_program, onnx_program, args, kwargs or {}, summary=summary,
                                 tolerance=tolerance, workspace=workspace, fallback=fallback,
                                 other_sizes=other_sizes, sessions=sessions, translated=translated,
                                 profiler=profiler).run()
    except Exception as error:  # noqa: BLE001 - a verification bug must not fail the export
        from onnxlens.exporter.verify import findings as found

        message = f"onnxlens failed while verifying (please report this): {type(error).__name__}: {first_line(error)}"
        summary.passed, summary.error, summary.error_source = False, message, "onnxlens"
        findings = [found.not_run_finding(message)]
    summary.seconds = round(time.perf_counter() - start, 4)
    return summary, findings


class _Verification:
    def __init__(self, exported_program, onnx_program, args, kwargs, *, summary: VerificationSummary,
                 tolerance: Tolerance, workspace: Workspace | None, fallback: Location | None,
                 other_sizes: bool = False, sessions: Any = None, translated: Any = None,
                 profiler: Any = None):
        self.program = exported_program if exported_program is not None else getattr(
            onnx_program, "exported_program", None)
        self.onnx_program = onnx_program
        self.args, self.kwargs = tuple(args or ()), kwargs
        self.summary = summary
        self.tolerance = tolerance
        self.workspace = workspace
        self.fallback = fallback
        self.other_sizes = other_sizes
        self.sessions = sessions
        self.translated = translated
        self.profiler = profiler

    def run(self) -> list[Finding]:
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
            summary.passed, summary.error, summary.error_source = False, str(problem), "inputs"
            return [findings.not_run_finding(str(problem))]

        try:
            torch_outputs = runtime.run_torch(self.program, graph_inputs)
        except runtime.TorchFailed as failed:
            summary.passed, summary.error_source = False, "torch"
            summary.error = f"torch could not run the model: {failed.text}"
            return [findings.torch_failure_finding(failed, self.workspace)]
        sessions = self.sessions if self.sessions is not None else runtime.Sessions(model)
        try:
            session = sessions.session(profiler=self.profiler)
            onnx_outputs = runtime.run(session, feeds)
            if self.profiler is not None:
                self.profiler.collect(session)
        except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
            if self.profiler is not None:
                self.profiler.discard()
            message = first_line(error)
            summary.passed, summary.error_source = False, "onnxruntime"
            summary.error = f"onnxruntime could not run the model: {message}"
            failure = findings.runtime_failure_finding(message, self.program, model, self.workspace)
            if self.other_sizes:
                return [self._arriving(failure, message, model, sessions, feeds, graph_inputs)]
            return [failure]
        del session  # (a profiled one is a session of its own: not kept past its run)

        pairs = self._user_output_pairs(torch_outputs)
        onnx_names = [v.name for v in model.graph.outputs]
        failing: list[Divergence] = []
        for index, ((node, expected), actual) in enumerate(zip(pairs, onnx_outputs)):
            name = onnx_names[index] if index < len(onnx_names) else str(index)
            comparison = compare.compare(expected, actual, tolerance=self.tolerance)
            summary.outputs.append(OutputComparison(
                name=name, compared=comparison.comparable, passed=comparison.passed,
                max_abs_diff=comparison.max_abs_diff, max_rel_diff=comparison.max_rel_diff,
                dtype=comparison.dtype, shape=list(comparison.shape), note=comparison.note or None,
                nan_mismatches=comparison.nan_mismatches or None,
                rtol=comparison.rtol if comparison.comparable else None,
                atol=comparison.atol if comparison.comparable else None,
                noise=comparison.noise if comparison.comparable and comparison.noise else None))
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
                                                         tolerance=self.tolerance, shapes_differ=self.other_sizes)
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
            verdict.add(summary, finding, found.node, self.program, model, sessions, feeds, graph_inputs,
                        tolerance=self.tolerance)
        return [finding]

    def _arriving(self, failure: Finding, message: str, model: Any, sessions: Any, feeds: dict,
                  graph_inputs: list) -> Finding:
        """onnxruntime failed at other sizes, torch did not: the first value before the failing
        node that differs from torch's (a shape the graph fixed, arriving there) is where the
        finding goes; the failing node as it was when none differs."""
        import onnxlens.exporter.verify.onnx_nodes as onnx_nodes
        from onnxlens.exporter.verify import divergence, findings

        onnx_node = onnx_nodes.named_node(message, model)
        if onnx_node is None:
            return failure
        try:
            found, _ = divergence.first_divergence(self.program, model, sessions, feeds, graph_inputs,
                                                   tolerance=self.tolerance, shapes_differ=True, before=onnx_node)
        except Exception as error:  # noqa: BLE001 - the failing node's own place stays
            self.summary.localisation_error = f"{type(error).__name__}: {first_line(error)}"
            return failure
        if found is None:
            # Every value before it that both have agrees: the nearest op before the failing
            # node the ONNX model has no value of (a decomposition that read the example's sizes).
            from onnxlens.exporter.verify.compare import Comparison

            node = onnx_nodes.fx_node(onnx_node, self.program) or onnx_nodes.origin(
                onnx_nodes.fx_node(onnx_node, self.translated), self.program)
            compared = {c.node for c in divergence.candidates(self.program, model)}
            blamed = divergence.nearest_uncompared(node, compared) if node is not None else None
            if blamed is None:
                return failure
            found = Divergence(blamed, None, Comparison(False, passed=False, note=(
                "it has no value of its own in the ONNX model, and every value before the failing node agrees")))
        self.summary.first_mismatch = findings.describe(found)
        arriving = findings.mismatch_finding(found, self.summary, self.workspace, self.fallback)
        arriving.message = (f"onnxruntime could not run the model at {onnx_nodes.describe(onnx_node)} ({message}); "
                            f"before it, {arriving.message[0].lower()}{arriving.message[1:]}")
        arriving.code = "verification"
        return arriving

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
