"""Where the lines an export saw are in the editor's buffer now.

An export reads the files on disk; its line data (hover, inlay hints, the change and cost lenses) is by
line number in that text, and the user goes on editing. When a result comes, the text of each
file it has line data for is kept, as on disk then — the text the export saw, unless a save came
in between (its export follows): a line whose text is not what the export recorded for it
(`LineInfo.code`) is left out. A request maps a line of that text to the buffer as it is now
(the open document's text, with unsaved edits; the file on disk for a closed one) with difflib:
a line the edits left as it was keeps its data, moved with the lines added or removed above
it; a line that was edited, or removed, loses it until the next result.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from onnxlens.exporter.types import ExportResult
from onnxlens.server.lsp.exporting.project import norm

Owner = tuple[str, str]  # (config file, target)
# A file's current text, lines without their ends: the open buffer's, else the disk's; None if unreadable.
CurrentText = Callable[[str], "list[str] | None"]


@dataclass
class _Seen:
    lines: tuple[str, ...]
    stale: set[int] = field(default_factory=set)  # 1-based lines whose text changed before the result came
    # The last mapping asked for: the current text it was computed for, seen line -> current line.
    current: list[str] | None = None
    forward: dict[int, int] = field(default_factory=dict)
    backward: dict[int, int] = field(default_factory=dict)


class ExportedText:
    def __init__(self, read_disk: Callable[[str], "str | None"], current: CurrentText) -> None:
        """`read_disk`: a file's text on disk (None if unreadable); `current`: see CurrentText."""
        self._read_disk = read_disk
        self._current = current
        self._seen: dict[Owner, dict[str, _Seen]] = {}

    def remember(self, owner: Owner, result: ExportResult) -> None:
        """The text of the files `result` has line data for, as the export saw them."""
        files: dict[str, _Seen] = {}
        for info in [*result.lines, *(result.cost.lines if result.cost is not None else [])]:
            path = norm(info.file)
            seen = files.get(path)
            if seen is None:
                text = self._read_disk(path)
                if text is None:
                    continue
                seen = files[path] = _Seen(tuple(text.splitlines()))
            number = info.line
            if not (0 < number <= len(seen.lines)) or seen.lines[number - 1].strip() != info.code:
                seen.stale.add(number)
        self._seen[owner] = files

    def forget(self, owner: Owner) -> None:
        self._seen.pop(owner, None)

    def now(self, owner: Owner, path: str, line: int) -> int | None:
        """The 1-based line of the buffer where `line` of the text the export saw is now; None
        if it was edited or removed since (or its text is unknown)."""
        seen = self._seen.get(owner, {}).get(path)
        if seen is None or line in seen.stale:
            return None
        return self._forward(seen, path).get(line)

    def then(self, owner: Owner, path: str, line: int) -> int | None:
        """The inverse of `now`: the line of the text the export saw that `line` of the buffer is."""
        seen = self._seen.get(owner, {}).get(path)
        if seen is None:
            return None
        self._map(seen, path)
        found = seen.backward.get(line)
        return None if found is None or found in seen.stale else found

    def _forward(self, seen: _Seen, path: str) -> dict[int, int]:
        self._map(seen, path)
        return seen.forward

    def _map(self, seen: _Seen, path: str) -> None:
        """The mapping for the file's current text (kept until that text changes)."""
        current = self._current(path)
        if current is None:
            seen.current, seen.forward, seen.backward = None, {}, {}
        elif current != seen.current:
            seen.current, seen.forward = current, unchanged_lines(seen.lines, current)
            seen.backward = {new: old for old, new in seen.forward.items()}


def unchanged_lines(before: Sequence[str], after: Sequence[str]) -> dict[int, int]:
    """1-based line of `before` -> its line in `after`, for the lines an edit left as they were."""
    if list(before) == list(after):
        return {number: number for number in range(1, len(before) + 1)}
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    moved: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            moved[block.a + offset + 1] = block.b + offset + 1
    return moved
