"""Which adapter of torch's internals runs with the installed torch: the one rule.

onnxlens reproduces `torch.onnx.export(..., dynamo=True)` step by step with torch's private
pieces (capture strategies, decomposition tables, `_core` translation, the tracer's stack
filter ...) to report every problem on the user's own line. Those pieces are not an API: they
move between releases. Every use of them goes through one adapter module of this package, and
nothing else in onnxlens imports a private torch module (tests/test_layout.py):

    torch_2_13.py   the reference adapter: torch 2.13's internals (also 2.14 and 2.15, which
                    did not change any piece onnxlens uses)
    torch_2_12.py   2.13's, except where 2.12 differs (the tracer keeps no stack-trace anchors)
    public.py       no adapter for this torch: the public `torch.onnx.export(..., dynamo=True)`,
                    findings from its exception, a `torch-version` note saying so
    cia_override.py torch's CompositeImplicitAutograd override, recorded (the full adapters')
    deferred_graph_code.py  graph modules whose code is made when first needed, named as
                    eager ones name theirs (the full adapters' capture and decompose)
    active.py       the adapter of this process, imported as `internals` by the pipeline

The choice depends only on the torch version string, read from package metadata, so the
server (which never imports torch) names the worker's adapter too (`onnxlens --version`, the
server log, the cache key). A torch release without an adapter (a newer minor release, or one
older than the oldest adapter) is not refused: it runs through the public path, with findings
that may be coarser but never on a wrong line, and the `torch-version` note on every export.
Policy for a new torch minor release (README "Supported torch versions"): it runs through the
public path until its tests pass with an adapter; then it is added to ADAPTERS (a new module
only where its internals differ), and the oldest release leaves the table, so the four newest
minor releases are covered.

This module is torch-free: the server imports it.
"""

from __future__ import annotations

import os
import re
from typing import Mapping

# torch minor release -> the adapter for its internals (a module of this package).
ADAPTERS: dict[tuple[int, int], str] = {
    (2, 12): "torch_2_12",
    (2, 13): "torch_2_13",
    (2, 14): "torch_2_13",
    (2, 15): "torch_2_13",
}
PUBLIC = "public"

# The torch version the selection sees instead of the installed one, when set: read here only.
# Tests run a real export as an unreleased torch would (the public path); a user may try a
# newer torch with the newest adapter (`ONNXLENS_TORCH_VERSION=2.15`), at their own risk.
VERSION_VARIABLE = "ONNXLENS_TORCH_VERSION"

_MINOR = re.compile(r"^\s*(\d+)\.(\d+)")


def adapter_for(torch_version: str | None) -> str:
    """The adapter module's name for a torch version string ("2.13.0+cpu", "2.16.0.dev20270101"):
    by its minor release; PUBLIC for a release without one, or an unreadable version."""
    match = _MINOR.match(torch_version or "")
    if match is None:
        return PUBLIC
    return ADAPTERS.get((int(match[1]), int(match[2])), PUBLIC)


def seen_torch_version(installed: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The torch version the selection sees: VERSION_VARIABLE when set, else the installed one."""
    environ = os.environ if environ is None else environ
    return environ.get(VERSION_VARIABLE) or installed


def adapter_in(installed: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The adapter a process with this installed torch and this environment selects."""
    return adapter_for(seen_torch_version(installed, environ))


def supported_releases() -> str:
    """"2.12–2.15": the minor releases with an adapter, for messages."""
    releases = sorted(ADAPTERS)
    first, last = releases[0], releases[-1]
    return f"{first[0]}.{first[1]}–{last[0]}.{last[1]}"


def describe(adapter: str) -> str:
    """How messages name an adapter: "torch_2_13 (torch 2.13–2.15)", "public (torch.onnx.export)"."""
    if adapter == PUBLIC:
        return "public (no adapter: the public torch.onnx.export)"
    releases = [f"{major}.{minor}" for (major, minor), name in sorted(ADAPTERS.items()) if name == adapter]
    span = releases[0] if len(releases) == 1 else f"{releases[0]}–{releases[-1]}"
    return f"{adapter} (torch {span})"
