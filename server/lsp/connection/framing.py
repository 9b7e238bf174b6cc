"""LSP's base protocol read from a byte stream: header lines, an empty line, then a body of
Content-Length bytes. Plain bytes in, bodies and framing errors out; no I/O, no JSON.

pygls' own reader is left out (server.py feeds this one) because of what it does with a bad
frame: a header it cannot read (`Content-Length: abc`, a lower-case name, a length too short)
leaves it reading every later body as header lines, alive but deaf to the client; a huge
Content-Length is read into memory at once (`Content-Length: 99999999999`: MemoryError, the
server dies).

The rules here, each a `FramingError` followed by a resync (the stream is never given up):

* A header block is `Name: value` lines ending with an empty line. Names are case-insensitive,
  lines end with \\r\\n (a bare \\n is accepted), empty lines before a frame are skipped, and
  headers other than Content-Length (Content-Type) are ignored.
* A header block without a Content-Length of decimal digits, with a line that is not a header,
  or longer than MAX_HEADER_BYTES is an error.
* A Content-Length over MAX_MESSAGE_BYTES is refused: the body is skipped as it arrives, never
  held in memory.
* A body in which a `Content-Length: N` line appears before the declared length is complete is
  cut there: the declared length was too long, and the next frame starts at that line.

Resync: after an error the reader skips to the next `Content-Length: N` line (RESYNC). Valid
JSON cannot contain one — its strings hold no raw line breaks, and the name outside a string
is no JSON — so no valid body is ever mistaken for a header, and the faulty frame's body is
skipped with whatever preceded the next header.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The largest body accepted: a didOpen of a big generated file is a few MB; 64 MB is far above
# any real message and far below what would hurt the server's memory.
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024

RESYNC = re.compile(rb"content-length[ \t]*:[ \t]*\d+[ \t]*\r?\n", re.IGNORECASE)
RESYNC_OVERLAP = 128  # bytes kept between chunks so that a RESYNC line cut in two is still seen
_HEADER_END = re.compile(rb"\r?\n\r?\n")
_HEADER_LINE = re.compile(rb"([!#$%&'*+\-.^_`|~0-9A-Za-z]+)[ \t]*:[ \t]*(.*?)[ \t]*")
_LENGTH = re.compile(rb"\d+")


@dataclass(frozen=True)
class FramingError:
    """A frame that could not be read; the reader has resynced past it."""

    reason: str


class FrameReader:
    """Feed bytes as they arrive; get complete bodies and framing errors, in stream order."""

    def __init__(self, max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
        self.max_message_bytes = max_message_bytes
        self._buffer = bytearray()
        self._length: int | None = None  # reading a body of this many bytes
        self._checked = 0  # body bytes already searched for a RESYNC line
        self._skipping = False  # after an error: looking for the next header

    @property
    def buffered(self) -> int:
        """Bytes held: a body being read, or what a resync keeps (RESYNC_OVERLAP)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | FramingError]:
        self._buffer += data
        out: list[bytes | FramingError] = []
        while self._step(out):
            pass
        return out

    def _step(self, out: list[bytes | FramingError]) -> bool:
        """One frame, error or resync; False when more bytes are needed."""
        if self._skipping:
            return self._resync()
        if self._length is not None:
            return self._body(out)
        return self._header(out)

    def _header(self, out: list[bytes | FramingError]) -> bool:
        blank = len(self._buffer) - len(self._buffer.lstrip(b"\r\n"))
        del self._buffer[:blank]
        end = _HEADER_END.search(self._buffer, 0, MAX_HEADER_BYTES + 4)
        if end is None:
            complete = self._buffer[:self._buffer.rfind(b"\n") + 1]
            if (bad := _bad_line(complete)) is not None:
                return self._error(out, f"a header line that is no `Name: value`: {_shown(bad)}")
            if len(self._buffer) > MAX_HEADER_BYTES:
                return self._error(out, f"a header block over {MAX_HEADER_BYTES} bytes")
            return False
        length, problem = self._content_length(self._buffer[:end.start()])
        if problem is not None:
            # A refused length's own header must not be read again; otherwise resume inside
            # the block, where junk may precede the next real header.
            return self._error(out, problem, resume=end.end() if length else 1)
        del self._buffer[:end.end()]
        self._length, self._checked = length, 0
        return True

    def _content_length(self, block: bytes) -> tuple[int, str | None]:
        """The declared length and, if the block cannot be used, why (with the length when
        the number was read but refused)."""
        if (bad := _bad_line(block)) is not None:
            return 0, f"a header line that is no `Name: value`: {_shown(bad)}"
        values = [m.group(2) for line in block.split(b"\n")
                  if (m := _HEADER_LINE.fullmatch(line.rstrip(b"\r"))) and m.group(1).lower() == b"content-length"]
        if not values:
            return 0, "a header block without Content-Length"
        if _LENGTH.fullmatch(values[-1]) is None:
            return 0, f"Content-Length is not a number of bytes: {_shown(values[-1])}"
        length = int(values[-1])
        if length > self.max_message_bytes:
            return length, (f"a message of {length} bytes, over the limit of {self.max_message_bytes} "
                            "bytes: refused unread")
        return length, None

    def _body(self, out: list[bytes | FramingError]) -> bool:
        assert self._length is not None
        length = self._length
        header = RESYNC.search(self._buffer, max(0, self._checked - RESYNC_OVERLAP), length + RESYNC_OVERLAP)
        if header is not None and header.start() < length:
            out.append(FramingError(f"Content-Length was {length}, but a new message starts after "
                                    f"{header.start()} bytes of its body"))
            del self._buffer[:header.start()]
            self._length = None
            return True
        if len(self._buffer) < length:
            self._checked = len(self._buffer)
            return False
        out.append(bytes(self._buffer[:length]))
        del self._buffer[:length]
        self._length = None
        return True

    def _error(self, out: list[bytes | FramingError], reason: str, resume: int = 1) -> bool:
        out.append(FramingError(reason))
        del self._buffer[:resume]
        self._skipping = True
        return True

    def _resync(self) -> bool:
        """Skip to the next RESYNC line; False when the buffer (kept short) has none yet."""
        found = RESYNC.search(self._buffer)
        if found is None:
            del self._buffer[:-RESYNC_OVERLAP]
            return False
        del self._buffer[:found.start()]
        self._skipping = False
        return True


def _bad_line(lines: bytes) -> bytes | None:
    """The first non-empty line of `lines` that is no `Name: value` header."""
    return next((line for line in lines.split(b"\n")
                 if line.strip() and not _HEADER_LINE.fullmatch(line.rstrip(b"\r"))), None)


def _shown(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return repr(text if len(text) <= 60 else text[:60] + "…")
