"""Where tables and keys are in a TOML text: tomllib parses values but gives no line numbers.

The config loader validates the parsed data and needs, for every mistake, the line and columns
of the offending header, key or value so the `config` finding lands on it. This scanner reads the
text line by line and records every table header and every `key = value` line of each table. It
follows strings, multi-line strings and arrays/inline tables spanning lines, so lines inside them
are never taken for keys. It is only used on text tomllib has already accepted.

Lines and columns are 1-based; `end_column` is exclusive (the convention of exporter/types.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_column: int


@dataclass
class KeySite:
    key: Span
    value: Span  # on the key's line; a value spanning lines is cut at the end of its first line


@dataclass
class TableSite:
    path: tuple[str, ...]  # () for the root table
    is_array: bool  # [[array of tables]] occurrence
    header: Span | None  # None for the root table
    keys: dict[str, KeySite] = field(default_factory=dict)  # first component of each key


_BARE_KEY = r"[A-Za-z0-9_-]+"
_QUOTED_KEY = r'"(?:[^"\\]|\\.)*"|\'[^\']*\''
_KEY_PART = rf"(?:{_BARE_KEY}|{_QUOTED_KEY})"
_KEY_LINE = re.compile(rf"^(\s*)({_KEY_PART}(?:\s*\.\s*{_KEY_PART})*)\s*=\s*")
_HEADER_LINE = re.compile(r"^(\s*)(\[\[?)(.*?)(\]\]?)\s*(?:#.*)?$")
_KEY_PARTS = re.compile(_KEY_PART)


def split_key(dotted: str) -> tuple[str, ...]:
    """`tool . "onnxlens"` -> ("tool", "onnxlens")."""
    parts = []
    for match in _KEY_PARTS.finditer(dotted):
        part = match.group(0)
        if part[0] in "\"'":
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


class _Continuation:
    """What is still open at the end of a line: a multi-line string and/or brackets."""

    def __init__(self) -> None:
        self.string: str | None = None  # the closing delimiter of an open multi-line string
        self.depth = 0  # open [ and { of values

    @property
    def open(self) -> bool:
        return self.string is not None or self.depth > 0

    def scan(self, line: str, start: int = 0) -> int:
        """Advance over `line[start:]`; return where its code ends (a comment or the end)."""
        i = start
        while i < len(line):
            if self.string is not None:
                close = line.find(self.string, i)
                if close < 0:
                    return len(line)
                i = close + len(self.string)
                self.string = None
                continue
            char = line[i]
            if char == "#":
                return i
            if line.startswith('"""', i) or line.startswith("'''", i):
                self.string = line[i:i + 3]
                i += 3
            elif char in "\"'":
                i = _end_of_string(line, i)
            else:
                if char in "[{":
                    self.depth += 1
                elif char in "]}":
                    self.depth = max(0, self.depth - 1)
                i += 1
        return len(line)


def _end_of_string(line: str, start: int) -> int:
    quote = line[start]
    i = start + 1
    while i < len(line):
        if quote == '"' and line[i] == "\\":
            i += 2
            continue
        if line[i] == quote:
            return i + 1
        i += 1
    return len(line)


def scan_tables(text: str) -> list[TableSite]:
    """Every table of `text` in order of appearance, starting with the root table."""
    root = TableSite(path=(), is_array=False, header=None)
    tables = [root]
    current = root
    state = _Continuation()
    for number, line in enumerate(text.splitlines(), start=1):
        if state.open:
            state.scan(line)
            continue
        header = _HEADER_LINE.match(line)
        if header and header.group(2) == "[" * len(header.group(4)):
            indent = len(header.group(1))
            end = indent + len(header.group(2)) + len(header.group(3)) + len(header.group(4))
            current = TableSite(
                path=split_key(header.group(3)),
                is_array=len(header.group(2)) == 2,
                header=Span(number, indent + 1, end + 1),
            )
            tables.append(current)
            continue
        key = _KEY_LINE.match(line)
        if not key:
            continue
        key_start = len(key.group(1))
        key_end = key_start + len(key.group(2))
        value_start = key.end()
        code_end = state.scan(line, value_start)
        value_end = len(line[:code_end].rstrip())
        name = split_key(key.group(2))[0]
        current.keys.setdefault(name, KeySite(
            key=Span(number, key_start + 1, key_end + 1),
            value=Span(number, value_start + 1, max(value_end, value_start + 1) + 1),
        ))
    return tables
