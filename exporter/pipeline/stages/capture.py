"""The capture stage: torch.export the model, and turn capture failures into findings.

The stock strategies, non-strict then strict, each error kept (tracing/strategies.py); their
failures as findings, one per line of the user's code (failures/capture_failures.py). Past the
first failure: draft_export's problems (failures/draft_problems.py) and the higher-order op bodies
behind the first refused one (hop_bodies.py), each a finding of its own. Inputs or dynamic shapes
that do not fit the model are one finding on the factory's `return` (input_mistakes.py), an
output type torch.export cannot flatten one at the value (outputs.py), and a dynamic-shapes
declaration the code contradicts is placed on the line that does (dynamic_dims.py). While
capture traces, ops that certainly have no translation are reported at once as preliminary
findings of the scan (traced_ops.py).
"""

from __future__ import annotations

import onnxlens.exporter.pipeline.failures.input_mistakes as input_mistakes
import onnxlens.exporter.pipeline.untranslatable.outputs as outputs
from onnxlens.exporter.locations import locate
from onnxlens.exporter.pipeline.failures.call_chains import user_frames
from onnxlens.exporter.pipeline.failures.capture_failures import findings_for_failure, is_data_dependent, misses_fake_kernel
from onnxlens.exporter.pipeline.failures.draft_problems import draft_problems
from onnxlens.exporter.pipeline.failures.dynamic_dims import check_dynamic_dims, relocate_refusal
from onnxlens.exporter.pipeline.failures.errors import headline
from onnxlens.exporter.pipeline.failures.hop_bodies import bodies_past_first
from onnxlens.exporter.pipeline.failures.past_first import FurtherProblem
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.tracing.stacks import helper_frames_kept
from onnxlens.exporter.pipeline.tracing.strategies import capture
from onnxlens.exporter.pipeline.untranslatable.traced_ops import ops_checked_while_traced
from onnxlens.exporter.torch_internals.active import internals


def run(job: Job) -> None:
    """The capture stage: the program on the job, or the findings of every strategy's failure."""
    target = job.target
    # Helper frames first: the ops checked while traced are located with them.
    with helper_frames_kept(job.workspace) as kept, ops_checked_while_traced(job), \
            internals.shape_facts_recorded() as job.shape_facts, \
            internals.traced_tensors_stored() as job.stored_tensors:
        captured = capture(target.model, target.args, target.kwargs, target.dynamic_shapes)
        if captured.program is not None and captured.attempts:
            job.log(f"captured with torch.export {captured.strategy} after: " + "; ".join(
                f"{a.strategy}: {headline(a.error)}" for a in captured.attempts))
    if captured.program is not None:
        job.program = captured.program
        # Only non-strict traces carry the extra helper frames (see stacks.py).
        job.anchors = kept if captured.strategy == "non-strict" else None
        check_dynamic_dims(job)
        return
    job.error = captured.attempts[0].error if captured.attempts else None
    errors = [attempt.error for attempt in captured.attempts]
    mistake = input_mistakes.finding(job, errors)
    if mistake is not None:
        job.fail([mistake])
    unflattenable = outputs.unflattenable_type([attempt.error for attempt in captured.attempts])
    # Only when no strategy found a line of the user's code (strict may name the user's return).
    if unflattenable is not None and not any(locate(user_frames(attempt.error, job.workspace), job.workspace).location
                                             for attempt in captured.attempts):
        explained = outputs.unflattenable_finding(job, captured, unflattenable)
        if explained is not None:
            job.fail([explained])
    further: list[FurtherProblem] = []
    # The failures draft_export carries on past (the first is torch's; it reports the next ones too).
    if any(is_data_dependent(a.error) or misses_fake_kernel(a.error) for a in captured.attempts):
        further += draft_problems(job, captured)
    # The higher-order op bodies behind the first one dynamo refused.
    further += bodies_past_first(target, [(a.strategy, a.error) for a in captured.attempts], job.workspace,
                                 user_frames, job.log)
    job.fail(relocate_refusal(findings_for_failure(captured, job.workspace, job.fallback, further), job))
