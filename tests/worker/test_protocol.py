"""The msgpack frame protocol, over real pipes."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest

from onnxlens.exporter.protocol import (
    PROTOCOL_VERSION,
    FrameReader,
    ProtocolError,
    hello_problem,
    pack,
    read_frame_async,
    write_frame,
)
from onnxlens.exporter.types import Finding, FindingsEvent, Location, Related, event_from_dict, event_to_dict

MESSAGES = [
    {"type": "job", "id": 1, "spec": {"name": "mlp", "timeout": 1.5, "input_names": None}},
    {"type": "event", "id": 1, "event": {"event": "stage", "stage": "capture", "seconds": 0.25}},
    {"type": "log", "id": 1, "text": "ü" * 100_000},  # bigger than a pipe's buffer
]


def test_frames_survive_any_split_into_pieces():
    data = b"".join(pack(message) for message in MESSAGES)
    reader = FrameReader()
    received = []
    for index in range(0, len(data), 7):
        received += reader.feed(data[index:index + 7])
    assert received == MESSAGES
    assert reader.pending == 0


def test_values_msgpack_cannot_encode_arrive_as_text():
    from pathlib import Path

    [message] = FrameReader().feed(pack({"type": "event", "event": {"file": Path("/a/b.py")}}))
    assert message["event"]["file"] == "/a/b.py"


def test_findings_sent_ahead_of_the_result_come_back_typed():
    """docs/process-model.md: event dicts become typed ProgressEvents, a findings event with its
    Findings; a malformed or unknown event is dropped, not a crash."""
    finding = Finding(code="unsupported-op", message="no ONNX translation for aten.linalg_eig.default",
                      stage="scan", location=Location(file="/w/deep.py", line=6, column=12),
                      related=[Related(file="/w/deep.py", line=20, message="called from here")])
    event = FindingsEvent("scan", (finding,), preliminary=True)
    [message] = FrameReader().feed(pack({"type": "event", "id": 1, "event": event_to_dict(event)}))
    assert event_from_dict(message["event"]) == event
    assert event_from_dict({"event": "findings", "stage": "scan", "findings": [{"code": "x"}]}) is None
    assert event_from_dict({"event": "from-a-newer-worker"}) is None


@pytest.mark.parametrize("garbage, problem", [
    (struct.pack(">I", 2**31) + b"x", "not an onnxlens worker stream"),
    (struct.pack(">I", 3) + b"\xc1\xc1\xc1", "undecodable"),
    (pack({"no": "type"}), "not a message"),
])
def test_garbage_is_a_protocol_error(garbage, problem):
    with pytest.raises(ProtocolError, match=problem):
        FrameReader().feed(garbage)


@pytest.mark.asyncio
async def test_frames_cross_a_real_pipe_to_an_asyncio_reader():
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                os.fdopen(read_fd, "rb"))

    def writer() -> None:
        for message in MESSAGES:
            write_frame(write_fd, message)
        os.close(write_fd)

    sending = loop.run_in_executor(None, writer)
    received = [await read_frame_async(reader) for _ in MESSAGES]
    assert received == MESSAGES
    assert await read_frame_async(reader) is None  # clean EOF between frames
    await sending
    transport.close()


@pytest.mark.asyncio
async def test_a_stream_ending_inside_a_frame_is_a_protocol_error():
    reader = asyncio.StreamReader()
    reader.feed_data(pack(MESSAGES[0])[:-2])
    reader.feed_eof()
    with pytest.raises(ProtocolError, match="inside a frame"):
        await read_frame_async(reader)


def test_hello_of_another_version_is_explained():
    assert hello_problem({"type": "hello", "protocol": PROTOCOL_VERSION}) is None
    problem = hello_problem({"type": "hello", "protocol": PROTOCOL_VERSION + 1, "python": "/venv/bin/python"})
    assert f"protocol version {PROTOCOL_VERSION + 1}" in problem
    assert "/venv/bin/python" in problem
    assert "same onnxlens version" in problem
