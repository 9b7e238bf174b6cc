"""The result cache: an unchanged target is not exported again.

One msgpack file per target, `<output-dir>/cache/<target>.msgpack`, holding the last result and
the key it was computed under. The key is the sha256 of
* the content of every file of the target's closure (the workspace files the last export
  imported, plus the files its references name),
* the TargetSpec (every option, the output paths),
* the versions of torch, onnx, onnxscript, onnxruntime and onnxlens in the worker's interpreter
  (read with importlib.metadata, never by importing torch), the adapter of torch's internals they
  select (exporter/torch_internals/: a forced version takes another path), and the source of
  onnxlens's own exporter package (so an edited onnxlens does not serve stale results).

A result whose closure is unknown (the export died before importing anything) is not cached.
Timeouts and crashes are not cached either: they can depend on the machine's load. A corrupt or
foreign cache file is a miss and is overwritten by the next export; the cache never fails a job.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import msgpack

from onnxlens.exporter import references
from onnxlens.exporter.atomic import write_bytes
from onnxlens.exporter.types import ExportResult, TargetSpec
from onnxlens.exporter.torch_internals import adapter_in
from onnxlens.exporter.versions import exporter_source_digest, interpreter_versions

log = logging.getLogger("onnxlens.cache")

CACHE_FORMAT = "onnxlens-result-cache"
CACHE_VERSION = 1
UNCACHEABLE_CODES = {"timeout", "crash"}
MTIME_SLACK_NS = 20_000_000


def cache_file(spec: TargetSpec) -> Path:
    """<output-dir>/cache/<target>.msgpack. The output dir is where the config loader puts the
    reports directory (`<output-dir>/reports/<target>.md`)."""
    report_dir = Path(spec.report).parent
    output_dir = report_dir.parent if report_dir.name == "reports" else report_dir
    safe_name = "".join(c if c.isalnum() or c in "-_." else "_" for c in spec.name)
    return output_dir / "cache" / f"{safe_name}.msgpack"


def referenced_files(spec: TargetSpec) -> set[str]:
    """The FILE.py parts of the spec's references: always part of the closure (an absent file
    too: its appearance must change the key)."""
    files = set()
    for reference in (spec.model, spec.inputs, spec.dynamic_shapes, spec.custom_translations):
        parsed = references.parse(reference)
        if parsed is not None and parsed.is_file:
            files.add(str(parsed.candidate_files(spec.root)[0].resolve()))
    return files


class ResultCache:
    def __init__(self, python: str, env: Mapping[str, str] | None = None) -> None:
        """`python`, `env`: the worker's interpreter and environment (None: ours)."""
        self.python = python
        self.env = env

    @cached_property
    def versions(self) -> dict[str, Any]:
        """Package versions of the worker's interpreter (without importing torch), its adapter."""
        versions: dict[str, Any] = dict(interpreter_versions(self.python))
        versions["torch-adapter"] = adapter_in(versions.get("torch"), self.env)
        versions["onnxlens-exporter-source"] = exporter_source_digest()
        return versions

    def key(self, spec: TargetSpec, files: list[str]) -> str | None:
        """The cache key, or None if a file of the closure cannot be read."""
        digest = hashlib.sha256()
        header = {"spec": spec.to_dict(), "versions": self.versions, "format": CACHE_VERSION}
        digest.update(json.dumps(header, sort_keys=True, default=str).encode())
        for path in sorted(files):
            try:
                content = Path(path).read_bytes()
            except OSError:
                return None
            digest.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
        return digest.hexdigest()

    def load(self, spec: TargetSpec) -> ExportResult | None:
        """The cached result if it is still valid for the files as they are now, else None."""
        path = cache_file(spec)
        try:
            entry = msgpack.unpackb(path.read_bytes(), raw=False)
            if entry.get("format") != CACHE_FORMAT or entry.get("version") != CACHE_VERSION:
                return None
            files, stored_key, data = entry["files"], entry["key"], entry["result"]
            if not files or self.key(spec, files) != stored_key:
                return None
            result = ExportResult.from_dict(data)
        except FileNotFoundError:
            return None
        except Exception as error:  # noqa: BLE001 - any damage to the file is just a miss
            log.info("ignoring unreadable cache file %s: %s", path, error)
            return None
        written = result.onnx or result.graph_onnx  # a weights-free model writes its graph only
        if result.status == "ok" and not (written and os.path.isfile(written)):
            return None  # the .onnx was deleted: export again
        result.cached = True
        return result

    def store(self, spec: TargetSpec, result: ExportResult, *, job_started_ns: int) -> bool:
        """Remember `result` for the files as they are now. Returns whether it was stored.

        Not stored if any file of the closure changed after the job started: the export may
        have read the older content, and the cache must never pair new files with old results.
        """
        if not result.closure or any(f.code in UNCACHEABLE_CODES for f in result.findings):
            return False
        files = sorted(set(result.closure) | referenced_files(spec))
        # File times come from the kernel's coarse clock (one tick behind at most).
        changed_since = job_started_ns - MTIME_SLACK_NS
        try:
            if any(os.stat(f).st_mtime_ns >= changed_since for f in files):
                return False
        except OSError:
            return False
        key = self.key(spec, files)
        if key is None:
            return False
        data = result.to_dict()
        data["cached"] = False
        entry = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "key": key, "files": files,
                 "result": data}
        path = cache_file(spec)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, msgpack.packb(entry, use_bin_type=True, default=str))
        except OSError as error:
            log.warning("could not write cache file %s: %s", path, error)
            return False
        return True


def stored_files(spec: TargetSpec) -> list[str] | None:
    """The files the target's cached result depended on when it was stored, whether or not they
    changed since (None: no readable cache entry): which targets a changed file reaches."""
    try:
        entry = msgpack.unpackb(cache_file(spec).read_bytes(), raw=False)
        if entry.get("format") != CACHE_FORMAT or entry.get("version") != CACHE_VERSION:
            return None
        return [str(path) for path in entry["files"]]
    except Exception:  # noqa: BLE001 - a missing or damaged entry: the closure is unknown
        return None
