"""The LSP base protocol reader (server/lsp/connection/framing.py): every framing fault is one error and
the next well-formed message is read; a refused body is never held in memory. Pure bytes in,
bodies out: the fault tests over a real server are in tests/faults/test_framing.py."""

from __future__ import annotations

import json

import pytest

from onnxlens.server.lsp.connection.framing import MAX_HEADER_BYTES, RESYNC_OVERLAP, FrameReader, FramingError


def frame(body: bytes, *, header: bytes | None = None) -> bytes:
    return (header if header is not None else b"Content-Length: %d\r\n\r\n" % len(body)) + body


def message(n: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": n, "method": "textDocument/hover"}).encode()


def read(*chunks: bytes, reader: FrameReader | None = None) -> list:
    reader = reader or FrameReader()
    out = []
    for chunk in chunks:
        out += reader.feed(chunk)
    return out


def kinds(items: list) -> list:
    return ["error" if isinstance(item, FramingError) else item for item in items]


def test_frames_split_anywhere_read_the_same():
    stream = frame(message(1)) + frame(message(2), header=b"content-length:%d\r\nContent-Type: "
                                       b"application/vscode-jsonrpc; charset=utf-8\r\n\r\n" % len(message(2)))
    for cut in range(1, len(stream)):
        assert read(stream[:cut], stream[cut:]) == [message(1), message(2)], cut
    assert read(*(stream[i:i + 1] for i in range(len(stream)))) == [message(1), message(2)]


@pytest.mark.parametrize("bad", [
    frame(message(1), header=b"Content-Length: abc\r\n\r\n"),
    frame(message(1), header=b"Content-Length: -5\r\n\r\n"),
    frame(message(1), header=b"Content-Type: text/plain\r\n\r\n"),  # no length at all
    frame(message(1), header=b"Content-Length: 1000\r\n\r\n"),  # longer than what follows
    frame(message(1), header=b"Content-Length: 99999999999\r\n\r\n"),  # over the limit
    b"garbage without any header",
    b"\x00\xff" * (MAX_HEADER_BYTES + 10),  # no line end at all
])
def test_a_bad_frame_is_one_error_and_the_next_message_is_read(bad):
    assert kinds(read(bad + frame(message(2)))) == ["error", message(2)]
    # the same when the good message comes later, byte by byte
    reader = FrameReader()
    assert kinds(read(bad, reader=reader)) in (["error"], [])
    assert kinds(read(*(bytes([b]) for b in frame(message(2))), reader=reader))[-1] == message(2)


def test_a_short_length_gives_the_bytes_it_declared_then_resyncs():
    body = message(1)
    items = read(frame(body, header=b"Content-Length: 5\r\n\r\n") + frame(message(2)))
    assert kinds(items) == [body[:5], "error", message(2)]


def test_content_length_in_a_json_string_is_no_header():
    """JSON strings hold no raw line breaks: a body quoting a header is read whole."""
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen",
                       "params": {"text": "Content-Length: 12\r\n\r\nx"}}).encode()
    assert read(frame(body) + frame(message(2))) == [body, message(2)]


def test_blank_lines_between_frames_are_no_error():
    assert read(b"\r\n" + frame(message(1)) + b"\r\n\r\n" + frame(message(2))) == [message(1), message(2)]


def test_zero_length_is_an_empty_body():
    assert read(frame(b"") + frame(message(2))) == [b"", message(2)]


def test_a_refused_body_is_skipped_without_being_held():
    """A 96 MB body over a 64 MB limit, fed in 1 MB chunks: one error, and the reader never
    holds more than a chunk and the resync overlap."""
    reader = FrameReader()
    chunk = b"x" * (1 << 20)
    assert kinds(reader.feed(b"Content-Length: %d\r\n\r\n" % (96 << 20))) == ["error"]
    held = 0
    for _ in range(96):
        assert reader.feed(chunk) == []
        held = max(held, reader.buffered)
    assert held <= len(chunk) + RESYNC_OVERLAP
    assert reader.feed(frame(message(2))) == [message(2)]
