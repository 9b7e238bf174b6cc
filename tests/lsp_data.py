"""Helpers shared by the LSP-driven tests (tests/lsp, tests/faults)."""

from __future__ import annotations

from typing import Any


def plain(value: Any) -> Any:
    """pygls hands an unknown method's result back as nested namedtuple-like objects: make dicts."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
