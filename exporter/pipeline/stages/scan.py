"""The scan stage: every operator without an ONNX translation, before translating.

Every call of an op the job's registry cannot translate, dispatched as the translation will
(missing_translations.py), reported on the innermost line of the user's code that produced it
(exporter/locations), with what the user called to get it (op_sources.py); op_findings.py writes
the findings. Most of them were already sent while capture traced the ops, as preliminary
findings of this stage (traced_ops.py): the scan's own replace them. When it finds some, the
nodes whose translation fails for another reason are found too (translation_failures.py): every
failure at once.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.decompositions import job_decompositions
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.untranslatable.missing_translations import (lacks_translation, located_in_branches,
                                                                            unsupported_ops)
from onnxlens.exporter.pipeline.untranslatable.op_findings import findings_for, in_branch
from onnxlens.exporter.pipeline.untranslatable.translation_failures import (failure_findings_of, is_dispatch_failure,
                                                                            node_failures)
from onnxlens.exporter.proposals.decomposition_offers import offer_for
from onnxlens.exporter.types import DecompositionOffer


def run(job: Job) -> None:
    """The scan stage: a finding per line with ops that have no translation, each op with the
    start of a translation and, where torch has one, a decomposition to use instead."""
    tables: list = []  # the job's tables, built only if an op lacks a translation (the clean path skips it)

    def offer(node: Any) -> DecompositionOffer | None:
        if not tables:
            tables.append(job_decompositions(job))
        return offer_for(node, job.registry, tables[0].python_decomp_table, job.log)

    missing = unsupported_ops(job.decomposed, job.registry, opset=job.opset, offer=offer)
    if not missing:
        return
    # Stock meets some of these nodes with another error before it dispatches them (converting
    # an argument it cannot hold: the op `auto_functionalized_v2` wraps): that error is stock's
    # answer there, and the nodes are left to the failures of the translation.
    failures = node_failures(job)
    stops_before_dispatch = {failure.node for failure in failures if not is_dispatch_failure(failure.error)}
    missing = [op for op in missing if op.node not in stops_before_dispatch]
    if not missing:
        return  # the translate stage raises stock's error and reports every failing node
    located = located_in_branches(job, missing) if any(map(in_branch, missing)) else missing
    # The translation will not run: the other nodes whose translation fails are reported now.
    others = failure_findings_of(job, [failure for failure in failures
                                       if failure.node in stops_before_dispatch
                                       or not lacks_translation(failure.node, job.registry)])
    job.fail(findings_for(located, job.workspace, job.fallback) + others)
