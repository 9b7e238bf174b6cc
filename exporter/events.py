"""The pipeline's progress events: what a running export reports before its result (its stages,
its log lines, findings known before the result). Torch-free: they cross the pipe as payloads
(exporter/wire/frames.py), dicts {"event": KIND, ...} (`event_to_dict`), and the worker client
(server/service/worker.py) turns them back into these types (`event_from_dict`); the server adds its own
kinds (server/service/events.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Union

from onnxlens.exporter.types import Finding
from onnxlens.exporter.wire.plain import Plain


@dataclass(frozen=True)
class StageEvent(Plain):
    stage: str  # one of STAGES
    state: str  # "begin" | "end"
    seconds: float = 0.0  # the stage's duration, on "end"
    kind: ClassVar[str] = "stage"


@dataclass(frozen=True)
class LogEvent(Plain):
    """A note from the pipeline for the server's log (e.g. "draft_export could not ...")."""

    text: str
    kind: ClassVar[str] = "log"


@dataclass(frozen=True)
class FindingsEvent(Plain):
    """Findings of one stage, sent before the export's result so that editors show them while
    the export goes on.

    `preliminary`: sent while an earlier stage still runs, as far as they are known then (the
    `unsupported-op` findings of the scan, from the ops capture has traced so far); the stage
    itself decides. Otherwise: the stage has ended, the export goes on, and these are its
    findings (a stage that ends the export sends none: its result follows at once). Each event
    holds all the findings of `stage` known at that point and replaces the stage's earlier
    event: a stage that ends with none after preliminary ones sends an empty event. The
    result's findings replace every event's. Older servers ignore the event (an unknown kind).

    `settled`: every stage up to `stage` has ended (sent, even when empty, once translation
    ends): their findings in this export are final, and the previous result's findings of those
    stages no longer hold. Stock `torch.onnx.export` raises only in these stages, so the editor
    shows the export's errors now; check, verify and save may still add theirs.
    """

    stage: str  # the stage whose findings these are (one of STAGES)
    findings: tuple[Finding, ...] = ()
    preliminary: bool = False
    settled: bool = False
    kind: ClassVar[str] = "findings"


PipelineEvent = Union[StageEvent, LogEvent, FindingsEvent]
# Where a running export's events go (the pipeline's `on_event`).
PipelineEventSink = Callable[[PipelineEvent], None]
_EVENT_TYPES: dict[str, type[Plain]] = {cls.kind: cls for cls in (StageEvent, LogEvent, FindingsEvent)}


def event_to_dict(event: PipelineEvent) -> dict[str, Any]:
    return {"event": event.kind, **event.to_dict()}


def event_from_dict(data: Any) -> PipelineEvent | None:
    """The typed event of a wire dict; None for anything unknown (a newer worker's event)."""
    if not isinstance(data, dict):
        return None
    cls = _EVENT_TYPES.get(data.get("event"))
    if cls is None:
        return None
    try:
        return cls.from_dict(data)
    except (TypeError, AttributeError):  # a required field is missing, or one of the wrong shape
        return None
