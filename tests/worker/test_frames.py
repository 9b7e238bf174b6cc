"""The worker protocol's contract: docs/process-model.md's frame table is the frames of
exporter/wire/frames.py (every frame, its channel, its fields), and the zygote never decodes what it
relays (a payload: a progress event, a result, the previous graph)."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

from onnxlens.exporter.wire import frames

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| (?P<channel>[a-z]+ → [a-z]+) \| `(?P<type>[a-z]+)` \|(?P<fields>[^|]*)\|")


def documented() -> set[tuple[str, str, tuple[str, ...]]]:
    text = (REPO / "docs" / "process-model.md").read_text(encoding="utf-8")
    section = text[text.index("## The worker protocol"):]
    rows = set()
    for line in section.splitlines():
        if match := ROW.match(line):
            fields = tuple(name.strip() for name in match["fields"].split(",") if name.strip())
            rows.add((match["channel"].replace("→", "->"), match["type"], fields))
    return rows


def in_the_code() -> set[tuple[str, str, tuple[str, ...]]]:
    return {(channel.name, type_, tuple(field.name for field in dataclasses.fields(cls)))
            for channel in frames.CHANNELS for type_, cls in channel.frames.items()}


def test_the_documented_frames_are_the_frames_of_the_code():
    rows = documented()
    assert len(rows) >= 18  # the table was found
    assert rows == in_the_code()


def test_the_zygote_relays_payloads_without_decoding_them():
    source = (REPO / "exporter" / "worker" / "zygote.py").read_text(encoding="utf-8")
    names = {node.id for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute)}
    assert not {"unpack_payload", "event_from_dict"} & (names | attributes)
    assert "from_dict" not in attributes
