"""The wire protocol between the server and the export worker (the zygote): msgpack frames.

A frame is a 4-byte big-endian length followed by that many bytes of msgpack, encoding one
message: a dict with a "type" key. Torch-free: the server imports this module.

Zygote -> server:
    hello    {protocol, pid, python}                     first frame, before torch is imported
    ready    {versions, seconds, adapter}                torch imported, pipeline warmed up; adapter:
                                                         {name, fallback}: the adapter of torch's
                                                         internals in use (torch_internals/), why the
                                                         public path runs although one was chosen
    fatal    {message}                                   the zygote cannot serve (then it exits)
    started  {id, pid}                                   a child was forked for job `id` (or the
                                                         spare forked ahead took it)
    event    {id, event}                                 a progress event of the pipeline
    log      {id, text}                                  output the user's code printed
    result   {id, result | None, cancelled, completes}   the job's ExportResult dict (one per job);
                                                         completes: a saved export, verified next
    completed {id, result | None, reason}                after a `result` that `completes`: the
                                                         verified result, or None when the child
                                                         ended first (`reason` says how)
    exited   {id, status, cpu_seconds, max_rss_kb}       the child was reaped: always a job's last frame
    preloaded {modules, seconds}                         library modules jobs used are now in the zygote
    retire   {reason, deny}                              preloading `deny` started a thread: the zygote
                                                         is no longer safe to fork; start a new one
                                                         (with `deny` in PRELOAD_DENY_VARIABLE) and
                                                         close this one's stdin once its jobs are done

Server -> zygote:
    job      {id, spec, options, previous?}              spec: TargetSpec dict; options: {threads};
                                                         previous: the target's previous ExportedGraph
                                                         dict, for the report's change section
    cancel   {id}                                        kill the job's child (and its process group)
    shutdown {}                                          kill every child and exit

Child -> zygote (a pipe per child; the zygote relays):
    event    {event}
    result   {result, imports, completes}                imports: library modules the job loaded
    completed {result}                                   the verified result (after `completes`)
    closure  {files}                                     the workspace files imported so far

Zygote -> spare (a socket; a spare is a child forked ahead of its job):
    job      {id, spec, options}                         the job's message, with the target's kept
                                                         random fills' descriptor (SCM_RIGHTS)
Spare -> zygote: the byte b"R" once it is warm.

Closing the zygote's stdin is the same as `shutdown`: a zygote whose server died exits.
"""

from __future__ import annotations

import asyncio
import os
import struct
from typing import Any

import msgpack

# Bump on any incompatible change to the frames or messages above.
PROTOCOL_VERSION = 1

# Thread-pool sizes the client forces to 1 in the zygote's environment (an OpenMP pool does not
# survive fork). The user's own values of these, and of what exporter/launch.py sets
# (PYTHONSAFEPATH), travel in USER_ENV_VARIABLE (JSON) and children restore them, so processes
# started by user code see the user's settings.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
USER_ENV_VARIABLE = "ONNXLENS_USER_THREAD_ENV"

# Library preloading (see exporter/worker/preload.py): "0" in PRELOAD_VARIABLE turns it off;
# PRELOAD_DENY_VARIABLE lists top-level packages never to preload (comma-separated).
PRELOAD_VARIABLE = "ONNXLENS_PRELOAD"
PRELOAD_DENY_VARIABLE = "ONNXLENS_PRELOAD_DENY"

# Exit status of a child whose own onnxlens code failed (not the user's code).
INTERNAL_ERROR_STATUS = 70

# A spare's process names (ps, top, psutil's name()) until it takes a job: tests, benchmarks and
# people tell it from a job's child by them. WARMING_NAME from its first instant (the zygote takes
# the name around the fork), SPARE_NAME once it has told the zygote it is warm.
WARMING_NAME = "onnxlens-warmup"
SPARE_NAME = "onnxlens-spare"
SPARE_NAMES = (WARMING_NAME, SPARE_NAME)

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 1 << 30  # a length beyond this means the stream is not ours (or is corrupt)

Message = dict[str, Any]


class ProtocolError(Exception):
    """The peer sent something that is not a frame of this protocol."""


def pack(message: Message) -> bytes:
    # default=str: an odd value inside a progress event (a Path, a torch dtype) must not break
    # the stream; it arrives as its text.
    body = msgpack.packb(message, use_bin_type=True, default=str)
    return _HEADER.pack(len(body)) + body


def _unpack_body(body: bytes) -> Message:
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as error:  # msgpack raises several unrelated types for garbage
        raise ProtocolError(f"undecodable frame: {error}") from None
    if not isinstance(message, dict) or "type" not in message:
        raise ProtocolError(f"frame is not a message: {message!r:.200}")
    return message


def _frame_length(header: bytes) -> int:
    (length,) = _HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes announced: not an onnxlens worker stream")
    return length


def hello_problem(message: Message) -> str | None:
    """Why a hello frame is unacceptable (a clear sentence for the user), or None if it is fine."""
    if message.get("type") != "hello":
        return f"the export worker sent {message.get('type')!r} instead of a hello"
    version = message.get("protocol")
    if version != PROTOCOL_VERSION:
        return (
            f"the export worker speaks protocol version {version}, this server speaks "
            f"{PROTOCOL_VERSION}: the interpreter {message.get('python')} has a different onnxlens "
            "version installed; install the same onnxlens version in both environments"
        )
    return None


# ---- the zygote's side: plain blocking file descriptors ------------------------------------


def write_frame(fd: int, message: Message) -> None:
    """Write one whole frame to `fd` (blocking)."""
    view = memoryview(pack(message))
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Incremental decoder for a non-blocking stream: feed it bytes, get whole messages."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Message]:
        self._buffer += data
        messages = []
        while len(self._buffer) >= _HEADER.size:
            length = _frame_length(bytes(self._buffer[: _HEADER.size]))
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            messages.append(_unpack_body(bytes(self._buffer[_HEADER.size:end])))
            del self._buffer[:end]
        return messages

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered."""
        return len(self._buffer)


# ---- the server's side: asyncio streams ----------------------------------------------------


async def read_frame_async(reader: asyncio.StreamReader) -> Message | None:
    """The next message, or None at a clean end of stream (EOF between frames)."""
    try:
        header = await reader.readexactly(_HEADER.size)
    except asyncio.IncompleteReadError as error:
        if error.partial:
            raise ProtocolError("stream ended inside a frame header") from None
        return None
    try:
        body = await reader.readexactly(_frame_length(header))
    except asyncio.IncompleteReadError:
        raise ProtocolError("stream ended inside a frame") from None
    return _unpack_body(body)


def write_frame_async(writer: asyncio.StreamWriter, message: Message) -> None:
    """Queue one frame on an asyncio writer (await writer.drain() to apply back-pressure)."""
    writer.write(pack(message))
