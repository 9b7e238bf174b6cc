"""What a listener of the export service (server/service/exports.py) is told while an export runs: the
pipeline's events (exporter/events.py) and the server's own, which never cross the pipe: the
user code's output (the zygote's `log` frames) and "answered from the cache".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Union

from onnxlens.exporter.events import FindingsEvent, LogEvent, StageEvent
from onnxlens.exporter.wire.plain import Plain


@dataclass(frozen=True)
class OutputEvent(Plain):
    """Text the user's code printed while it ran in the export process."""

    text: str
    kind: ClassVar[str] = "output"


@dataclass(frozen=True)
class CachedEvent(Plain):
    """The service answered from the result cache: no job runs."""

    target: str
    kind: ClassVar[str] = "cached"


ProgressEvent = Union[StageEvent, LogEvent, FindingsEvent, OutputEvent, CachedEvent]
EventSink = Callable[[ProgressEvent], None]
