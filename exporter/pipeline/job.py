"""One export job: the target, what each stage produced so far, and the result being built.

Stages read what earlier stages left on the `Job` and add their own (load: the target and the
registry; capture: the program; decompose; translate: the ONNX program). A stage that produced
error findings ends the pipeline with `job.fail(...)` (the report is still written). Progress
goes to the job's sink as typed events (exporter/events.py); the worker turns them into
payloads, in-process callers take them as they are. This layer knows nothing about LSP.

Findings travel ahead of the result, so that editors show them while the export goes on: a
stage after which the export continues sends its findings as a FindingsEvent when it ends, and
a stage may send findings of a later one while it runs (`preliminary`: capture knows some of
the scan's before the scan runs, traced_ops.py). The result still carries them all.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, NoReturn

from onnxlens.exporter.locations import Workspace
from onnxlens.exporter.events import FindingsEvent, LogEvent, PipelineEvent, PipelineEventSink, StageEvent
from onnxlens.exporter.types import ExportResult, Finding, Location, TargetSpec

if TYPE_CHECKING:
    import onnx
    from torch.export import ExportedProgram
    from torch.onnx import ONNXProgram

    from onnxlens.exporter.pipeline.target.code import LoadedTarget, Loader
    from onnxlens.exporter.pipeline.tracing.stacks import HelperFrames
    from onnxlens.exporter.pipeline.tables import Tables
    from onnxlens.exporter.pipeline.target.weights import WeightsFree


class Stop(Exception):
    """A stage produced error findings: the pipeline ends here (the report is still written)."""


@dataclass(eq=False)
class Job:
    spec: TargetSpec
    tables: Tables  # the pipeline's, shared by every job of the process
    on_event: PipelineEventSink
    kept_fills_fd: int | None = None  # the target's kept random fills (kept_fills.py); None: none kept
    result: ExportResult = field(init=False)
    workspace: Workspace = field(init=False)
    stage: str = "load"  # the running stage
    error: BaseException | None = None  # the exception that stopped the pipeline, for the report
    # load
    loader: Loader | None = None
    target: LoadedTarget | None = None
    registry: Any = None  # torch.onnx's ONNXRegistry, a private copy: custom translations go there
    custom_key: tuple[str, ...] = ()  # which ops the custom translations cover (tables.custom_table_key)
    opset: int = 0
    raw_dynamic_shapes: Any = None  # as the factory returned them: string dims name the ONNX axes
    raw_inputs: Any = None  # as the inputs factory returned them, before they became args and kwargs
    need_axis_mapping: bool = False
    shapes_location: Location | None = None  # the dynamic-shapes factory's definition
    shape_facts: Any = None  # what capture learnt about the input sizes, with stacks (internals.ShapeFacts)
    stored_tensors: list[Any] = field(default_factory=list)  # trace values stored in module state (internals.StoredTensor)
    weights_free: WeightsFree | None = None  # the model's weights have no data (weights.py)
    # capture
    program: ExportedProgram | None = None
    anchors: HelperFrames | None = None  # what stock capture keeps of the helper frames (stacks.py)
    # decompose, translate
    decomposed: ExportedProgram | None = None
    onnx_program: ONNXProgram | None = None
    # optimize: the user's line of each ONNX node (lines.py), for what each line costs (line_costs.py)
    node_lines: Any = None  # lines.NodeLines (lines.py imports this module)
    # check (weights-free models only): the graph-only model the save writes (graph_only.py)
    graph_only: onnx.ModelProto | None = None
    # Stages whose findings went out in a FindingsEvent: when such a stage ends, its own event
    # replaces the earlier one, even with no findings.
    reported: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.result = ExportResult(target=self.spec.name, status="failed", export_id=uuid.uuid4().hex)
        self.workspace = Workspace.of(self.spec)

    @property
    def fallback(self) -> Location | None:
        """Where a finding without a line of the user's code goes: the model's definition."""
        return self.result.model_location

    def emit(self, event: PipelineEvent) -> None:
        try:
            self.on_event(event)
        except Exception:  # noqa: BLE001 - a broken listener must not break the export
            pass

    def log(self, text: str) -> None:
        self.emit(LogEvent(text))

    def fail(self, findings: list[Finding]) -> NoReturn:
        self.result.findings.extend(findings)
        raise Stop()

    def report_preliminary(self, stage: str, findings: list[Finding]) -> None:
        """Findings of `stage`, a later stage, known while this one runs: all of them so far
        (the event replaces the previous one). `stage` confirms or drops them when it ends."""
        self.reported.add(stage)
        self.emit(FindingsEvent(stage, tuple(findings), preliminary=True))

    @contextlib.contextmanager
    def running(self, stage: str, *, settles: bool = False, after_result: bool = False) -> Iterator[None]:
        """A stage: its begin and end events (end even when it fails), its time, and, when the
        export goes on after it, its findings (the warnings it found; an empty event replaces
        preliminary findings it did not confirm). A stage that ends the export sends none: the
        result follows at once (the report is written after it) and carries them. A stage that
        `settles` always sends its event when the export goes on (FindingsEvent.settled). A
        stage `after_result` (Pipeline.finish) sends none either: the completed result, right
        after it, carries them."""
        self.stage = stage
        self.emit(StageEvent(stage, "begin"))
        begin = time.perf_counter()
        known = len(self.result.findings)
        going_on = False
        try:
            yield
            going_on = True
        finally:
            seconds = time.perf_counter() - begin
            self.result.stages[stage] = seconds
            found = self.result.findings[known:]
            if going_on and not after_result and (found or stage in self.reported or settles):
                self.reported.add(stage)
                self.emit(FindingsEvent(stage, tuple(found), settled=settles))
            self.emit(StageEvent(stage, "end", seconds))
