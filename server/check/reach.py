"""Which targets a set of changed files reaches: `onnxlens check --changed FILE...`, the
pre-commit hook (.pre-commit-hooks.yaml passes the staged files).

A target is reached when a changed file is in its closure: the workspace files its last export
imported (kept with its cached result, server/service/cache.py, when the cache trusts the entry) and the
files its config references name. A target without a cached result is reached by any change (its closure is unknown until
it is exported once), and a change of the config file reaches every target. Paths compare with
symlinks resolved.
"""

from __future__ import annotations

import os
from pathlib import Path

from onnxlens.exporter.types import TargetSpec
from onnxlens.server.config import Config
from onnxlens.server.service.cache import ResultCache, referenced_files


def reached(config: Config, specs: list[TargetSpec], changed: list[Path], cache: ResultCache) -> list[TargetSpec]:
    """The specs (in their order) that a change of any of `changed` may affect."""
    files = {os.path.realpath(path) for path in changed}
    if os.path.realpath(config.config_file) in files:
        return list(specs)
    out = []
    for spec in specs:
        closure = cache.stored_files(spec)
        if closure is None:
            out.append(spec)
            continue
        depends_on = {os.path.realpath(path) for path in (*closure, *referenced_files(spec))}
        if files & depends_on:
            out.append(spec)
    return out
