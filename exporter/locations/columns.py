"""Where on a line the culprit is: columns in characters, the call of an op, the call of a module.

Columns in findings are 1-based and count characters; Python (tracebacks, ast) counts UTF-8
bytes, so every byte offset goes through `character_column`. Torch-free: text and ast.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import re
from typing import NamedTuple


class Span(NamedTuple):
    """A range on the source: 1-based columns, `end_column` exclusive."""

    column: int
    end_line: int
    end_column: int


def character_column(text: str, byte_offset: int) -> int:
    """1-based character column of a 0-based UTF-8 byte offset into `text`."""
    return len(text.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore")) + 1


def source_line(file: str, line: int) -> str | None:
    text = linecache.getline(file, line)
    return text.rstrip("\n") if text else None


def first_non_blank(text: str | None) -> int:
    """The column a line's code starts at (1 for a blank or unknown line)."""
    if not text or not text.strip():
        return 1
    return len(text) - len(text.lstrip()) + 1


def stripped_line(text: str, line: int) -> Span:
    """The line's code without its indentation and trailing blanks."""
    return Span(first_non_blank(text), line, len(text.rstrip()) + 1)


def find_call(text: str, names: list[str]) -> tuple[int, int] | None:
    """0-based [start, end) of the first call `a.b.name(...)` of one of `names` in `text`."""
    for name in names:
        if not name:
            continue
        match = re.search(r"[\w.]*\b" + re.escape(name) + r"\s*\(", text)
        if not match:
            continue
        depth, end = 0, None
        for index in range(match.end() - 1, len(text)):
            if text[index] == "(":
                depth += 1
            elif text[index] == ")":
                depth -= 1
                if depth == 0:
                    end = index + 1
                    break
        return match.start(), end if end is not None else len(text.rstrip())
    return None


def call_names_for_op(torch_fn: str | None, op_name: str) -> list[str]:
    """Names a user may have written for an op: `linalg_eigvals` -> `linalg.eigvals`, `eigvals`."""
    names: list[str] = []
    for raw in (torch_fn, op_name):
        if not raw:
            continue
        base = raw.split(".")[-1] if raw != op_name else raw.split(".")[-2 if raw.count(".") >= 2 else -1]
        base = base.rstrip("_")
        for candidate in (base.replace("_", "."), base, base.split("_", 1)[-1], base.split("_")[-1]):
            candidate = candidate.lstrip("_")
            if candidate and candidate not in names:
                names.append(candidate)
    return names


def call_span(text: str, line: int, names: list[str]) -> Span | None:
    """The call of one of `names` on `text` (line `line`), as a Span."""
    found = find_call(text, names)
    return Span(found[0] + 1, line, found[1] + 1) if found else None


def module_call_span(file: str, line: int, text: str, attributes: list[set[str]]) -> Span | None:
    """The call expression on `line` that leads to a module, read with ast.

    `attributes` are sets of attribute names, most wanted first: the call `self.<attr>(...)` or
    `self.<attr>[i](...)` of the first set that has one wins; without any, the leftmost
    outermost call of the line. None when the file does not parse or the line has no call.
    """
    try:
        tree = _parse_file(file, os.path.getmtime(file))
    except OSError:
        tree = None
    if tree is None:
        return None
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line]
    if not calls:
        return None
    chosen = next((call for call in (_call_on_self(calls, wanted) for wanted in attributes) if call), None)
    if chosen is None:
        chosen = min(calls, key=lambda c: (c.col_offset, -(c.end_col_offset or 0)))
    column = character_column(text, chosen.col_offset)
    if chosen.end_lineno is None or chosen.end_col_offset is None:
        return Span(column, line, len(text.rstrip()) + 1)
    lines = linecache.getlines(file)
    end_text = lines[chosen.end_lineno - 1] if chosen.end_lineno - 1 < len(lines) else text
    return Span(column, chosen.end_lineno, character_column(end_text, chosen.end_col_offset))


def statement_at(file: str, line: int) -> ast.stmt | None:
    """The simple statement (a `return`, an assignment) that starts on `line`; None when the file
    does not parse or none starts there."""
    try:
        tree = _parse_file(file, os.path.getmtime(file))
    except OSError:
        return None
    if tree is None:
        return None
    compound = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
                ast.With, ast.AsyncWith, ast.Try)
    return next((node for node in ast.walk(tree)
                 if isinstance(node, ast.stmt) and node.lineno == line and not isinstance(node, compound)), None)


def node_span(file: str, node: ast.AST) -> Span:
    """Where an ast node of `file` is, from its start column to its end, in characters."""
    lines = linecache.getlines(file)

    def text(number: int) -> str:
        return lines[number - 1] if 0 < number <= len(lines) else ""

    end_line = node.end_lineno or node.lineno
    end = node.end_col_offset
    return Span(character_column(text(node.lineno), node.col_offset), end_line,
                character_column(text(end_line), end) if end is not None else len(text(end_line).rstrip()) + 1)


@functools.lru_cache(maxsize=64)
def _parse_file(path: str, mtime: float) -> ast.Module | None:  # mtime: cache key only
    try:
        with open(path, encoding="utf-8") as handle:
            return ast.parse(handle.read(), filename=path)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return None


def _call_on_self(calls: list[ast.Call], attributes: set[str]) -> ast.Call | None:
    """The call `self.<attr>(…)` or `self.<attr>[i](…)` with attr in `attributes` (any plain
    name as the receiver: not everyone calls it `self`; `self` wins a tie)."""
    if not attributes:
        return None
    matches = []
    for call in sorted(calls, key=lambda c: c.col_offset):
        func = call.func
        if isinstance(func, ast.Subscript):
            func = func.value
        if (isinstance(func, ast.Attribute) and func.attr in attributes
                and isinstance(func.value, ast.Name)):
            matches.append((func.value.id != "self", call))
    return min(matches, key=lambda m: m[0])[1] if matches else None
