"""One export's verification runs: on the example inputs (profiled with the target's `profile`),
on smaller inputs (`verify-inputs = "small"`), on other sizes for the dynamic dimensions (the
second shape), each a verify() of the same ONNX model with one set of sessions.

What fails or differs at sizes other than the example's is a `baked-shape` warning where the
finding was: a size of the example inputs is fixed in the graph. A run on the example inputs is
the only one profiled (`record_costs`: the result's cost per line); a verification
verify-inputs = "small" made on smaller inputs alone has none, and the log says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

from onnxlens.exporter.locations import Workspace
from onnxlens.exporter.types import Finding, Location, TargetSpec, VerificationSummary
from onnxlens.exporter.verify.findings import baked_shape


@dataclass
class Runs:
    """What the verification of one export runs on (the verify stage's job, in its parts)."""

    program: Any  # the captured program (torch.export.ExportedProgram)
    decomposed: Any  # the program the ONNX model was translated from
    onnx_program: Any  # torch.onnx.ONNXProgram
    args: tuple
    kwargs: dict
    spec: TargetSpec
    workspace: Workspace
    fallback: Location | None
    log: Callable[[str], None]
    record_costs: Callable[[Any], None]  # onnxruntime's profile of the example's run -> the cost per line

    def digest(self) -> str | None:
        """What this verification depends on (exporter/verify/reuse.py); None when unknown."""
        from onnxlens.exporter.verify import reuse

        try:
            return reuse.digest(self.decomposed, self.onnx_program.model, self.args, self.kwargs, self.spec)
        except Exception as error:  # noqa: BLE001 - without a digest it simply runs
            self.log(f"{self.spec.name}: no digest of the verification: {type(error).__name__}: {error}")
            return None

    def verified(self) -> tuple[VerificationSummary, list[Finding]]:
        """The verification's summary and findings: on the example inputs (profiled), or on the
        smaller inputs' first cut torch runs (`verify-inputs = "small"`), and on other sizes (the
        second shape) when it passes."""
        from onnxlens.exporter.verify import runtime

        # One serialized graph and set of weights for every session of this job (the second shape's too).
        sessions = runtime.Sessions(self.onnx_program.model)
        small = self._on_smaller_inputs(sessions) if self.spec.verify_inputs == "small" else None
        if small is not None and small[1].passed and not small[2]:
            cut, summary, findings = small  # sizes other than the example's: the second shape too
            if self.spec.profile:
                self.log(f"{self.spec.name}: no cost per line: verify-inputs = \"small\" verified on smaller inputs, and "
                         "only the run on the example inputs is profiled")
        else:
            summary, findings = self._profiled(sessions)
            if small is not None and summary.passed:
                # Right at the example's sizes, not at the cut ones: a size of the example is fixed.
                cut, _, cut_findings = small
                summary.other_sizes, summary.other_sizes_passed = cut.describe(), False
                findings = [baked_shape(f, f"the ONNX model does not follow its dynamic dimensions: with the smaller "
                                           f"inputs ({cut.describe()}), {f.message[0].lower()}{f.message[1:]}; a size "
                                           "of the example inputs is fixed in the graph here") for f in cut_findings]
            elif summary.passed and self.spec.second_shape:
                findings = findings + self._other_sizes(summary, sessions)
        return summary, findings

    def _profiled(self, sessions: Any) -> tuple[VerificationSummary, list[Finding]]:
        """verify() on the example inputs; with the target's `profile` on, onnxruntime's profiler on
        its run, and the result's cost per line from it (`record_costs`). Only this run is profiled:
        the smaller inputs' and the second shape's run other sizes than the example's."""
        from onnxlens.exporter.verify.profiling import Profiler

        profiler = Profiler() if self.spec.profile else None
        try:
            verified = self._on(sessions, self.args, self.kwargs, profiler=profiler)
        finally:
            if profiler is not None:
                profiler.discard()
        if profiler is not None:
            self.record_costs(profiler)
        return verified

    def _on(self, sessions: Any, args: tuple, kwargs: dict, *, other_sizes: bool = False,
            profiler: Any = None) -> tuple[VerificationSummary, list[Finding]]:
        """verify() on (args, kwargs); `other_sizes`: sizes other than the example's, against the
        captured program (the decomposed one may have fixed the example's sizes itself); `profiler`:
        onnxruntime's profiler on the run that gives the outputs."""
        from onnxlens.exporter.verify import verify
        from onnxlens.exporter.verify.tolerance import tolerance_of

        return verify(self.program if other_sizes else self.decomposed, self.onnx_program, args, kwargs,
                      tolerance=tolerance_of(self.spec), workspace=self.workspace, fallback=self.fallback,
                      other_sizes=other_sizes, sessions=sessions, translated=self.decomposed if other_sizes else None,
                      profiler=profiler)

    def _on_smaller_inputs(self, sessions: Any) -> tuple[Any, VerificationSummary, list[Finding]] | None:
        """`verify-inputs = "small"`: verification on the first cut of the example torch runs
        (exporter/verify/small_inputs.py), with the cut; None when there is none. Its sizes are not
        the example's, so it is the second shape as well: where it fails, verification on the example
        tells a size fixed in the graph from a model that is wrong at every size."""
        from onnxlens.exporter.verify import small_inputs

        try:
            cuts = small_inputs.candidates(self.decomposed, self.args, self.kwargs)
        except Exception as error:  # noqa: BLE001 - the example inputs still serve
            self.log(f"{self.spec.name}: no smaller inputs: {type(error).__name__}: {error}")
            cuts = []
        for cut in cuts:
            summary, findings = self._on(sessions, cut.args, cut.kwargs, other_sizes=True)
            if summary.error_source != "torch":
                summary.inputs = f"{cut.describe()} (verify-inputs = \"small\")"
                return cut, summary, findings
        self.log(f"{self.spec.name}: verify-inputs = \"small\": no dynamic dimension of the example could be cut; "
                "verified on the example inputs")
        return None

    def _other_sizes(self, summary: VerificationSummary, sessions: Any) -> list[Finding]:
        """The second-shape check (exporter/verify/second_shape.py): verification again with other
        sizes for the dynamic dimensions, against the captured program (the decomposed one may have
        fixed the sizes itself), the candidates in order until torch runs one. What fails or differs
        there is a `baked-shape` warning on the line verification puts it on. When torch refuses
        every larger candidate, the model has a size limit the ONNX model does not know of: a
        `baked-shape` warning where torch failed, saying what onnxruntime does at those sizes."""
        from onnxlens.exporter.verify.second_shape import candidates

        started = time.perf_counter()
        try:
            tried = candidates(self.program, self.args, self.kwargs)
        except Exception as error:  # noqa: BLE001 - the check is extra: never a reason to lose the export
            self.log(f"{self.spec.name}: no second-shape check: {type(error).__name__}: {error}")
            return []
        refused = None  # (sizes, torch's failure finding) of the first larger candidate torch refused
        checked = None  # (sizes, summary, findings) of the candidate torch ran
        for other in tried:
            again, findings = self._on(sessions, other.args, other.kwargs, other_sizes=True)
            if again.error_source == "torch":
                if other.larger and refused is None:
                    refused = (other, again, findings)
                continue
            checked = (other, again, findings)
            break
        found: list[Finding] = []
        if refused is not None and (checked is None or not checked[0].larger):
            found.append(self._size_limit(summary, sessions, *refused))
        if checked is not None:
            other, again, findings = checked
            if again.error is not None and not findings:  # it could not run there: nothing to say about the graph
                self.log(f"{self.spec.name}: second-shape check not run: {again.error}")
            else:
                summary.other_sizes, summary.other_sizes_passed = other.describe(), again.passed
                found.extend(baked_shape(f, f"the ONNX model does not follow its dynamic dimensions: with other sizes "
                                       f"({other.describe()}), {f.message[0].lower()}{f.message[1:]}; a size of the "
                                       "example inputs is fixed in the graph here") for f in findings)
        summary.other_sizes_seconds = round(time.perf_counter() - started, 4)
        return found

    def _size_limit(self, summary: VerificationSummary, sessions: Any, other: Any, again: VerificationSummary,
                    findings: list[Finding]) -> Finding:
        """torch refused every larger size for the dynamic dimensions: the model takes only some of
        the sizes the ONNX model's axes declare. On torch's failing line (its finding's place), with
        what onnxruntime does at those sizes (it has no such check)."""
        from onnxlens.exporter.verify import runtime

        summary.other_sizes_refused = f"{other.describe()}: {again.error.removeprefix('torch could not run the model: ')}"
        try:
            feeds = runtime.ort_feeds(self.onnx_program.model, runtime.user_inputs(self.program, other.args, other.kwargs))
            runtime.run(sessions.session(), feeds)
            onnx = "onnxruntime runs the exported model at these sizes without an error: its outputs are not the model's"
        except Exception as error:  # noqa: BLE001 - onnxruntime raises its own types
            from onnxlens.exporter.verify.divergence import first_line

            onnx = f"onnxruntime fails too ({first_line(error)})"
        (torch_failure,) = findings
        error = again.error.removeprefix("torch could not run the model: ")
        return baked_shape(torch_failure, (
            f"the ONNX model's dynamic dimensions take sizes the model does not: with larger sizes "
            f"({other.describe()}) torch raises here ({error}); {onnx}. A size of the example inputs is fixed "
            "in the model: give the dimensions the sizes they take (a `max` in the dynamic shapes) or make "
            "this code follow the size"))
