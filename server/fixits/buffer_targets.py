""""Add <Name> as an ONNX export target" for the lines selected in an editor's buffer: the
candidates (server/fixits/candidates.py) whose header line is selected and that no target
exports yet, each planned as its own fix (server/fixits/new_targets.py).

Pure: text in, fixes out; reads only the config (and the file, when the editor does not have
it open). The language server runs `new_target_fixes` in its helper process (server/offload.py):
parsing a big buffer holds the GIL for seconds. `selects_definition` is the cheap test it makes
first, on its own thread: a candidate's header is a top-level `class` or `def` line, at column 0.

Torch-free and LSP-free.
"""

from __future__ import annotations

import re
from pathlib import Path

from onnxlens.server.fixits.candidates import MAX_FILE_BYTES, find_candidates, readable_source
from onnxlens.server.fixits.fix import Fix
from onnxlens.server.fixits.new_targets import Choice, NewTargetsError, config_file_for, configured_models, is_configured, \
    plan_targets

_DEFINITION = re.compile(r"(class|def|async[ \t]+def)[ \t]")


def selects_definition(text: str, first: int, last: int) -> bool:
    """Whether 1-based lines `first`..`last` of `text` hold a top-level `class`/`def` line."""
    lines = text.split("\n", last)[first - 1:last]
    return any(_DEFINITION.match(line) for line in lines)


def new_target_fixes(file: Path, text: str | None, root: Path, first: int, last: int) -> tuple[list[Fix], list[str]]:
    """The fixes for candidates with their header on lines `first`..`last` (1-based) of `file`
    (`text`: the editor's buffer; None: read the file), and why others have none."""
    if text is None:
        try:
            if not readable_source(file):
                return [], []
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return [], []
    if len(text) > MAX_FILE_BYTES or not selects_definition(text, first, last):
        return [], []
    candidates = find_candidates(text)
    here = [c for c in candidates if c.top_level and first <= c.line <= last]
    if not here:
        return [], []
    configured = configured_models(config_file_for(root))
    fixes, notes = [], []
    for candidate in here:
        if is_configured(file, candidate, candidates, configured):
            continue
        try:
            fixes.append(plan_targets(root, [Choice(file, candidate)], sources={file: text}).fix)
        except NewTargetsError as error:
            notes.append(f"onnxlens: no target for {candidate.name}: {error}")
    return fixes, notes
