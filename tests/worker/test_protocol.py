"""The worker protocol: typed frames (exporter/wire/frames.py) framed by exporter/wire/protocol.py, over
real pipes."""

from __future__ import annotations

import asyncio
import os
import struct

import pytest

from onnxlens.exporter.wire import frames
from onnxlens.exporter.wire.frames import hello_problem, pack_payload, unpack_payload
from onnxlens.exporter.wire.protocol import (
    PROTOCOL_VERSION,
    FrameReader,
    ProtocolError,
    framed,
    read_frame_async,
    write_frame,
)
from onnxlens.exporter.events import FindingsEvent, StageEvent, event_from_dict, event_to_dict
from onnxlens.exporter.types import ExportResult, Finding, Location, Related, TargetSpec

SPEC = TargetSpec(name="mlp", root="/w", model="mlp.py:MLP", inputs="mlp.py:inputs", output="/w/mlp.onnx",
                  report="/w/mlp.md", timeout=1.5)
FRAMES = [
    frames.Job(id=1, spec=SPEC, threads=2),
    frames.Event(id=1, event=pack_payload(event_to_dict(StageEvent("capture", "end", 0.25)))),
    frames.Log(id=1, text="ü" * 100_000),  # bigger than a pipe's buffer
]


def test_frames_survive_any_split_into_pieces():
    data = b"".join(frame.encode() for frame in FRAMES)
    reader = FrameReader()
    bodies = []
    for index in range(0, len(data), 7):
        bodies += reader.feed(data[index:index + 7])
    assert [frames.TO_ZYGOTE.decode(bodies[0]), *map(frames.TO_SERVER.decode, bodies[1:])] == FRAMES
    assert reader.pending == 0


def test_every_frame_comes_back_equal_on_its_channel():
    """Each frame's one encode and its channel's one decode are inverses (fields filled)."""
    result = pack_payload(ExportResult(target="mlp", status="ok", seconds=1.0))
    samples = {
        frames.Hello: frames.Hello(protocol=PROTOCOL_VERSION, pid=7, python="/p"),
        frames.Ready: frames.Ready(versions={"torch": "2.13"}, seconds=3.0, adapter={"name": "a", "fallback": None}),
        frames.Fatal: frames.Fatal(message="no torch"),
        frames.Started: frames.Started(id=1, pid=9),
        frames.Event: FRAMES[1],
        frames.Log: frames.Log(id=1, text="hi"),
        frames.Result: frames.Result(id=1, result=result, completes=True),
        frames.Completed: frames.Completed(id=1, result=None, reason="killed"),
        frames.Exited: frames.Exited(id=1, status=0, cpu_seconds=0.5, max_rss_kb=1024),
        frames.Preloaded: frames.Preloaded(modules=3, seconds=0.1),
        frames.Retire: frames.Retire(reason="a thread", deny="tqdm"),
        frames.Job: frames.Job(id=1, spec=SPEC, threads=2, previous=b"\x80"),
        frames.Cancel: frames.Cancel(id=1),
        frames.Shutdown: frames.Shutdown(),
        frames.ChildEvent: frames.ChildEvent(event=b"\x80", stage="save", state="begin"),
        frames.ChildResult: frames.ChildResult(result=result, completes=True, imports=["tqdm"]),
        frames.ChildCompleted: frames.ChildCompleted(result=result),
        frames.Closure: frames.Closure(files=["/w/mlp.py"]),
    }
    for channel in frames.CHANNELS:
        for cls in channel.frames.values():
            [body] = FrameReader().feed(samples[cls].encode())
            assert channel.decode(body) == samples[cls]
    assert set(samples) == {cls for channel in frames.CHANNELS for cls in channel.frames.values()}


def test_a_frame_of_another_channel_or_missing_a_field_is_a_protocol_error():
    [body] = FrameReader().feed(frames.Cancel(id=1).encode())
    with pytest.raises(ProtocolError, match="no 'cancel' frame on the channel zygote -> server"):
        frames.TO_SERVER.decode(body)
    [body] = FrameReader().feed(framed({"type": "started", "id": 1}))
    with pytest.raises(ProtocolError, match="malformed 'started' frame"):
        frames.TO_SERVER.decode(body)


def test_values_msgpack_cannot_encode_arrive_as_text_in_a_payload():
    from pathlib import Path

    assert unpack_payload(pack_payload({"event": "log", "text": Path("/a/b.py")}))["text"] == "/a/b.py"


def test_findings_sent_ahead_of_the_result_come_back_typed():
    """docs/process-model.md: an event payload becomes a typed ProgressEvent, a findings event
    with its Findings; a malformed or unknown event is dropped, not a crash."""
    finding = Finding(code="unsupported-op", message="no ONNX translation for aten.linalg_eig.default",
                      stage="scan", location=Location(file="/w/deep.py", line=6, column=12),
                      related=[Related(file="/w/deep.py", line=20, message="called from here")])
    event = FindingsEvent("scan", (finding,), preliminary=True)
    [body] = FrameReader().feed(frames.Event(id=1, event=pack_payload(event_to_dict(event))).encode())
    assert event_from_dict(unpack_payload(frames.TO_SERVER.decode(body).event)) == event
    assert event_from_dict({"event": "findings", "stage": "scan", "findings": [{"code": "x"}]}) is None
    assert event_from_dict({"event": "from-a-newer-worker"}) is None


@pytest.mark.parametrize("garbage, problem", [
    (struct.pack(">I", 2**31) + b"x", "not an onnxlens worker stream"),
    (struct.pack(">I", 3) + b"\xc1\xc1\xc1", "undecodable"),
    (framed({"no": "type"}), "not a message"),
])
def test_garbage_is_a_protocol_error(garbage, problem):
    with pytest.raises(ProtocolError, match=problem):
        for body in FrameReader().feed(garbage):
            frames.TO_SERVER.decode(body)


def test_a_payload_that_is_not_msgpack_of_a_map_is_a_protocol_error():
    for garbage in (b"\xc1", pack_payload([1, 2])):  # type: ignore[arg-type]
        with pytest.raises(ProtocolError, match="payload"):
            unpack_payload(garbage)


@pytest.mark.asyncio
async def test_frames_cross_a_real_pipe_to_an_asyncio_reader():
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                os.fdopen(read_fd, "rb"))

    def writer() -> None:
        for frame in FRAMES[1:]:
            write_frame(write_fd, frame.encode())
        os.close(write_fd)

    sending = loop.run_in_executor(None, writer)
    received = [frames.TO_SERVER.decode(await read_frame_async(reader)) for _ in FRAMES[1:]]
    assert received == FRAMES[1:]
    assert await read_frame_async(reader) is None  # clean EOF between frames
    await sending
    transport.close()


@pytest.mark.asyncio
async def test_a_stream_ending_inside_a_frame_is_a_protocol_error():
    reader = asyncio.StreamReader()
    reader.feed_data(FRAMES[0].encode()[:-2])
    reader.feed_eof()
    with pytest.raises(ProtocolError, match="inside a frame"):
        await read_frame_async(reader)


def test_hello_of_another_version_is_explained():
    assert hello_problem(frames.Hello(protocol=PROTOCOL_VERSION)) is None
    problem = hello_problem(frames.Hello(protocol=PROTOCOL_VERSION + 1, python="/venv/bin/python"))
    assert f"protocol version {PROTOCOL_VERSION + 1}" in problem
    assert "/venv/bin/python" in problem
    assert "same onnxlens version" in problem
