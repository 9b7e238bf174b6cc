"""The quick fix "Decompose aten.X with torch's decomposition": the op into the target's
`extra-decompositions`.

An `unsupported-op` finding carries a DecompositionOffer for an op torch can decompose into ops
that have translations (exporter/proposals/decomposition_offers.py). The edit, as plain
insertions (edits.py) in a `Fix` (fix.py), in the config file:

* the target has no `extra-decompositions`: the key, on the line after the target's header;
* it has one whose array opens and closes on the key's line: the op appended inside it;
* anything else (an array spanning lines, the op already there): no fix; the finding's message
  still says what to add.

Torch-free and LSP-free.
"""

from __future__ import annotations

from pathlib import Path

from onnxlens.exporter.types import DecompositionOffer
from onnxlens.server.fixits.edits import Insertion
from onnxlens.server.fixits.fix import ConfiguredTarget, Fix
from onnxlens.server.toml_locations import scan_tables

KEY = "extra-decompositions"


def plan(target: ConfiguredTarget, offer: DecompositionOffer) -> Fix | None:
    """The edit adding `offer.op` to the target's extra-decompositions, or None when there is no
    clean place for it."""
    spec, config_file, target_line = target.spec, target.config_file, target.header_line
    if target_line is None or offer.op in (spec.extra_decompositions or []):
        return None
    title = f"Decompose {_short(offer.op)} with torch's decomposition ({offer.source})"
    file = str(config_file)
    if not spec.extra_decompositions:
        key = f'{KEY} = ["{offer.op}"]  # torch decomposes them into ops that have ONNX translations\n'
        return Fix(title, [Insertion(file, target_line + 1, 1, key)])
    try:
        text = Path(config_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    site = next((table.keys.get(KEY) for table in scan_tables(text)
                 if table.header is not None and table.header.line == target_line), None)
    if site is None:
        return None
    line = text.splitlines()[site.value.line - 1]
    value = line[site.value.column - 1:site.value.end_column - 1]
    if not (value.startswith("[") and value.endswith("]")):
        return None  # the array goes on past this line
    inside = value[1:-1].rstrip()
    separator = ", " if inside.strip() and not inside.endswith(",") else " " if inside.strip() else ""
    column = site.value.column + len(inside) + 1  # after the last element, before the `]`
    return Fix(title, [Insertion(file, site.value.line, column, f'{separator}"{offer.op}"')])


def _short(op: str) -> str:
    return op.rsplit(".", 1)[0] if op.endswith(".default") else op
