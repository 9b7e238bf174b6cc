"""The framing of the worker protocol between the server, the export worker (the zygote) and its
children: a frame is a 4-byte big-endian length followed by that many bytes of msgpack, encoding
one message, a map with a "type" key. The messages themselves, and which arrive on which
channel, are the frames of exporter/wire/frames.py (the contract; docs/process-model.md lists them).
Torch-free: the server imports this module.
"""

from __future__ import annotations

import asyncio
import os
import re
import struct
from typing import Any

import msgpack

# Bump on any incompatible change to the framing or to the frames (exporter/wire/frames.py).
PROTOCOL_VERSION = 2

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

# What allocators say when the address-space cap (RLIMIT_AS) or the machine runs out: in a
# crashed child's output (worker/crashes.py), a child's error (worker/child.py), onnxruntime's
# error in verification (verify/findings.py).
OUT_OF_MEMORY = re.compile(
    r"MemoryError|can't allocate memory|Cannot allocate memory|std::bad_alloc|out of memory",
    re.IGNORECASE,
)

# A spare's process names (ps, top, psutil's name()) until it takes a job: tests, benchmarks and
# people tell it from a job's child by them. WARMING_NAME from its first instant (the zygote takes
# the name around the fork), SPARE_NAME once it has told the zygote it is warm.
WARMING_NAME = "onnxlens-warmup"
SPARE_NAME = "onnxlens-spare"
SPARE_NAMES = (WARMING_NAME, SPARE_NAME)

_HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 1 << 30  # a length beyond this means the stream is not ours (or is corrupt)


class ProtocolError(Exception):
    """The peer sent something that is not a frame of this protocol."""


def framed(message: dict[str, Any]) -> bytes:
    """The frame of one message: its length, then its msgpack."""
    return frame_of(msgpack.packb(message, use_bin_type=True))


def frame_of(body: bytes) -> bytes:
    """The frame of a body read from a stream, to pass it on as it came."""
    return _HEADER.pack(len(body)) + body


def unpack(body: bytes) -> dict[str, Any]:
    """The message of a frame's body."""
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


# ---- the zygote's side: plain blocking file descriptors ------------------------------------


def write_frame(fd: int, data: bytes) -> None:
    """Write one whole frame (an encoded frame's bytes) to `fd` (blocking)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Incremental reader of a non-blocking stream: feed it bytes, get the bodies of whole frames
    (a channel of exporter/wire/frames.py decodes them)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        bodies = []
        while len(self._buffer) >= _HEADER.size:
            length = _frame_length(bytes(self._buffer[: _HEADER.size]))
            end = _HEADER.size + length
            if len(self._buffer) < end:
                break
            bodies.append(bytes(self._buffer[_HEADER.size:end]))
            del self._buffer[:end]
        return bodies

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame still buffered."""
        return len(self._buffer)


# ---- the server's side: asyncio streams ----------------------------------------------------


async def read_frame_async(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's body, or None at a clean end of stream (EOF between frames)."""
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
    return body


def write_frame_async(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Queue one frame (an encoded frame's bytes) on an asyncio writer (await writer.drain() to
    apply back-pressure)."""
    writer.write(data)
