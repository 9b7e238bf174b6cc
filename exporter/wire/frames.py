"""The frames of the worker protocol: the contract between the server, the zygote and a job's
child, one dataclass per message. Torch-free: the server imports this module.

A frame's `encode` gives its bytes on the wire (exporter/wire/protocol.py frames them: a length, then
msgpack of a map with a "type" key and the frame's fields); a channel's `decode` gives the frame
of a body read from that channel, by the table of the frames that may arrive on it. Three
channels: the zygote's stdout to the server (`TO_SERVER`), the server to the zygote's stdin
(`TO_ZYGOTE`, also the zygote to a spare: the server's `job` frame, relayed as it came), and a
child's events pipe to the zygote (`FROM_CHILD`). A spare's only word to the zygote is the byte
b"R" once it is warm (not a frame). docs/process-model.md lists every frame (tests/worker/
test_frames.py checks that table against these classes).

Decoded once per hop: what only the server reads (a progress event, a result, the previous
graph a job's report compares with) travels as a payload, the msgpack bytes of its plain data
(`pack_payload`), which the zygote relays without decoding it. The zygote reads only what it acts
on: the job's spec (its deadline, its report, its kept fills), a stage event's stage and state
(which stage a dying child was in; whether a cancel must wait for the save to end), a result's
`completes` and `imports`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgpack

from onnxlens.exporter.wire.plain import Plain, decode
from onnxlens.exporter.wire.protocol import PROTOCOL_VERSION, ProtocolError, framed, unpack
from onnxlens.exporter.types import TargetSpec

@dataclass(frozen=True)
class Frame:
    TYPE: ClassVar[str]

    def encode(self) -> bytes:
        """The frame's bytes on the wire."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return framed({"type": self.TYPE, **{name: value.to_dict() if isinstance(value, Plain) else value
                                            for name, value in fields.items()}})


class Channel:
    """The frames that may arrive on one channel, by their type."""

    def __init__(self, name: str, *frames: type[Frame]) -> None:
        self.name = name
        self.frames = {cls.TYPE: cls for cls in frames}

    def decode(self, body: bytes) -> Frame:
        message = unpack(body)
        cls = self.frames.get(message.get("type"))
        if cls is None:
            raise ProtocolError(f"no {message.get('type')!r} frame on the channel {self.name}")
        try:
            return decode(cls, message)
        except TypeError as error:  # a field is missing
            raise ProtocolError(f"malformed {cls.TYPE!r} frame: {error}") from None


def pack_payload(data: Plain | dict[str, Any]) -> bytes:
    # default=str: an odd value inside a progress event (a Path, a torch dtype) must not break
    # the stream; it arrives as its text.
    plain = data.to_dict() if isinstance(data, Plain) else data
    return msgpack.packb(plain, use_bin_type=True, default=str)


def unpack_payload(data: bytes) -> dict[str, Any]:
    """A payload's plain data, for its type's `from_dict` (a ProtocolError if it is not msgpack
    of a map)."""
    try:
        plain = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as error:  # msgpack raises several unrelated types for garbage
        raise ProtocolError(f"undecodable payload: {error}") from None
    if not isinstance(plain, dict):
        raise ProtocolError(f"payload is not a map: {plain!r:.200}")
    return plain


# ---- zygote -> server (its stdout) ---------------------------------------------------------

@dataclass(frozen=True)
class Hello(Frame):
    """The zygote's first frame, before it imports torch. Every field has a default: a zygote of
    another protocol version must still be told apart (`hello_problem`)."""

    TYPE: ClassVar[str] = "hello"
    protocol: int | None = None
    pid: int = 0
    python: str = ""


@dataclass(frozen=True)
class Ready(Frame):
    """torch imported, the pipeline warmed up."""

    TYPE: ClassVar[str] = "ready"
    versions: dict[str, str | None] = field(default_factory=dict)
    seconds: float = 0.0
    # The adapter of torch's internals in use (torch_internals/): {"name", "fallback"}, fallback
    # saying why the public path runs although one was chosen.
    adapter: dict[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Fatal(Frame):
    """The zygote cannot serve (then it exits)."""

    TYPE: ClassVar[str] = "fatal"
    message: str


@dataclass(frozen=True)
class Started(Frame):
    """A child was forked for job `id` (or the spare forked ahead took it)."""

    TYPE: ClassVar[str] = "started"
    id: int
    pid: int


@dataclass(frozen=True)
class Event(Frame):
    """A progress event of the job's pipeline: the child's payload, relayed unread."""

    TYPE: ClassVar[str] = "event"
    id: int
    event: bytes  # pack_payload of event_to_dict(ProgressEvent)


@dataclass(frozen=True)
class Log(Frame):
    """Output the user's code printed."""

    TYPE: ClassVar[str] = "log"
    id: int
    text: str


@dataclass(frozen=True)
class Result(Frame):
    """The job's result (one per job): the child's payload relayed unread, or the zygote's own
    (a crash, a time-out). `completes`: a saved export, verified next (a `completed` frame
    follows)."""

    TYPE: ClassVar[str] = "result"
    id: int
    result: bytes | None  # pack_payload(ExportResult); None: cancelled
    cancelled: bool = False
    completes: bool = False


@dataclass(frozen=True)
class Completed(Frame):
    """After a `result` that `completes`: the verified result, or None when the child ended
    first (`reason` says how)."""

    TYPE: ClassVar[str] = "completed"
    id: int
    result: bytes | None  # pack_payload(ExportResult)
    reason: str | None = None


@dataclass(frozen=True)
class Exited(Frame):
    """The child was reaped: always a job's last frame."""

    TYPE: ClassVar[str] = "exited"
    id: int
    status: int
    cpu_seconds: float
    max_rss_kb: int


@dataclass(frozen=True)
class Preloaded(Frame):
    """Library modules jobs used are now imported in the zygote (worker/preload.py)."""

    TYPE: ClassVar[str] = "preloaded"
    modules: int
    seconds: float


@dataclass(frozen=True)
class Retire(Frame):
    """Preloading `deny` started a thread: the zygote is no longer safe to fork. The server
    starts a new one (with `deny` in PRELOAD_DENY_VARIABLE) and closes this one's stdin once its
    jobs are done."""

    TYPE: ClassVar[str] = "retire"
    reason: str
    deny: str


# ---- server -> zygote (its stdin); the zygote relays a `job` to a spare --------------------

@dataclass(frozen=True)
class Job(Frame):
    """Run one export."""

    TYPE: ClassVar[str] = "job"
    id: int
    spec: TargetSpec
    threads: int = 1  # torch's threads in the child
    # The target's previous export's graph (pack_payload(ExportedGraph)), for the report's
    # change section: only the child reads it.
    previous: bytes | None = None


@dataclass(frozen=True)
class Cancel(Frame):
    """Kill the job's child (and its process group)."""

    TYPE: ClassVar[str] = "cancel"
    id: int


@dataclass(frozen=True)
class Shutdown(Frame):
    """Kill every child and exit (closing the zygote's stdin is the same)."""

    TYPE: ClassVar[str] = "shutdown"


# ---- child -> zygote (a pipe per child) ----------------------------------------------------

@dataclass(frozen=True)
class ChildEvent(Frame):
    """A progress event, for the zygote to relay as an `event`; a stage event's stage and state
    beside it, for the zygote itself."""

    TYPE: ClassVar[str] = "event"
    event: bytes  # pack_payload of event_to_dict(ProgressEvent)
    stage: str | None = None
    state: str | None = None


@dataclass(frozen=True)
class ChildResult(Frame):
    """The job's result, for the zygote to relay."""

    TYPE: ClassVar[str] = "result"
    result: bytes  # pack_payload(ExportResult)
    completes: bool = False
    imports: list[str] = field(default_factory=list)  # library modules the job loaded (preload.py)


@dataclass(frozen=True)
class ChildCompleted(Frame):
    """The verified result, after a result that `completes`."""

    TYPE: ClassVar[str] = "completed"
    result: bytes  # pack_payload(ExportResult)


@dataclass(frozen=True)
class Closure(Frame):
    """The workspace files the job imported so far: should the child die, its crash result
    names them."""

    TYPE: ClassVar[str] = "closure"
    files: list[str] = field(default_factory=list)


TO_SERVER = Channel("zygote -> server", Hello, Ready, Fatal, Started, Event, Log, Result, Completed, Exited,
                    Preloaded, Retire)
TO_ZYGOTE = Channel("server -> zygote", Job, Cancel, Shutdown)
FROM_CHILD = Channel("child -> zygote", ChildEvent, ChildResult, ChildCompleted, Closure)
CHANNELS = (TO_SERVER, TO_ZYGOTE, FROM_CHILD)


def hello_problem(hello: Hello) -> str | None:
    """Why the zygote's hello is unacceptable (a clear sentence for the user), or None."""
    if hello.protocol != PROTOCOL_VERSION:
        return (
            f"the export worker speaks protocol version {hello.protocol}, this server speaks "
            f"{PROTOCOL_VERSION}: the interpreter {hello.python} has a different onnxlens "
            "version installed; install the same onnxlens version in both environments"
        )
    return None
