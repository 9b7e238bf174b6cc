"""The nodes whose translation fails, as findings: each on its own line, all at once.

The stock translation stops at the first node that fails. When it fails, the program is
translated once more with every node's failure recorded (internals.translation_failures): each
failing node is a finding on its own line; stock's own failure is the first of them, worded as
stock words it. A failing `output` node is a value ONNX cannot hold that the model returns
(outputs.py: on the `return` that returned it). When the scan found ops without a translation,
the translation does not run: the scan asks for the nodes' failures (`node_failures`), so that
those are reported at once too.
"""

from __future__ import annotations

from typing import Any

from onnxlens.exporter.pipeline.failures.errors import error_finding, exception_chain
from onnxlens.exporter.pipeline.failures.failed_nodes import node_named_in
from onnxlens.exporter.pipeline.job import Job
from onnxlens.exporter.pipeline.untranslatable.outputs import untranslatable_output_finding
from onnxlens.exporter.torch_internals.active import internals
from onnxlens.exporter.types import Finding

CONTEXT = "translating to ONNX failed"


def failure_findings(job: Job, error: BaseException) -> list[Finding]:
    """One finding per node whose translation fails; stock's `error` is the first node's."""
    failures = node_failures(job)
    stock_node = _stock_node(job, error, failures)
    findings = [] if stock_node is not None else [error_finding(job, error, "translation", CONTEXT)]
    return findings + [_finding(job, failure.node, error if failure.node is stock_node else failure.error)
                       for failure in failures]


def failure_findings_of(job: Job, failures: list[Any]) -> list[Finding]:
    """A finding for each of these node failures (`node_failures`'), when the scan found ops
    without a translation and the translation does not run."""
    return [_finding(job, failure.node, failure.error) for failure in failures]


def is_dispatch_failure(error: BaseException) -> bool:
    """The node's translation failed where stock dispatches it: no translation for its op."""
    return any(type(item).__name__ == "DispatchError" for item in exception_chain(error))


def node_failures(job: Job) -> list[Any]:
    """Every node whose translation fails, each with its error as stock raises it there."""
    try:
        return internals.translation_failures(job.decomposed, job.registry)
    except Exception as error:  # noqa: BLE001 - what the first failure says still stands
        job.log(f"translating every node failed: {type(error).__name__}: {error}")
        return []


def _finding(job: Job, node: Any, error: BaseException) -> Finding:
    if node.op == "output":
        return untranslatable_output_finding(job, node, error)
    finding = error_finding(job, error, "translation", CONTEXT, node=node)
    finding.stage = "translate"
    return finding


def _stock_node(job: Job, error: BaseException, failures: list[Any]) -> Any:
    """The node stock's error stopped at, if the second run failed there too (it meets the nodes
    in the same order: its first failure)."""
    if not failures:
        return None
    first = failures[0].node
    chain = list(exception_chain(error))
    text = "\n".join(str(item) for item in chain)
    return first if first.format_node() in text or node_named_in(job, chain) is first else None
