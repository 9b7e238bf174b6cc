"""The result cache: an unchanged target is not exported again, and a forged result is never shown.

One msgpack file per target, `<output-dir>/cache/<target>.msgpack`, holding the last result and
the key it was computed under. The key is the sha256 of
* the content of every file of the target's closure (the workspace files the last export
  imported or opened, plus the files its references name),
* which of the paths where a module it looked for in the workspace and did not find would be
  (`ExportResult.absent`, exporter/pipeline/target/absent_modules.py) exist: none when stored, so
  writing the missing `helpers.py` is a miss,
* the TargetSpec (every option, the output paths),
* what the worker's interpreter has installed (server/service/installed.py: the names importable from
  each directory of its import path, each distribution's metadata): a package installed,
  removed, upgraded or reinstalled since is a miss, so an import failure is retried once the
  module is installed and a new version of a library exports again,
* the versions of torch, onnx, onnxscript, onnxruntime and onnxlens in the worker's interpreter
  (read with importlib.metadata, never by importing torch), the adapter of torch's internals they
  select (exporter/torch_internals/: a forced version takes another path), and the source of
  onnxlens's own exporter package (so an edited onnxlens does not serve stale results).
`ResultCache.key` computes it; nothing else does.

Trust: the cache directory lives in the workspace, where anyone who can write a file can write
an entry. An entry is used only when
* it is signed: an HMAC-SHA256 of the stored bytes under this user's key on this machine
  (exporter/user_key.py, outside the workspace). An entry edited by hand, written by another user,
  committed to a repository or restored on another machine is ignored (`onnxlens check
  --trust-cache` accepts one another key signed: a cache restored in CI);
* the files the export wrote are still those files: each recorded with its sha256 and inode
  identity (exporter/written.py), so a "last good model" swapped by another user of a shared
  output directory, or deleted, is exported again rather than reported as this result.
An ignored entry is a miss: the target is exported again and the entry replaced.

A result whose closure is unknown (the export died before importing anything) is not cached, nor
one whose job ran while the installed packages changed (the caller says which fingerprint the
job's worker was started under: ExportService replaces a worker started before a change, whose
preloaded libraries are the old ones).
Timeouts, crashes and failures to write the output are not cached either: they depend on the
machine (its load, its disk). A corrupt or foreign cache file is a miss and is overwritten by
the next export; the cache never fails a job.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import os
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import msgpack

from onnxlens.exporter import references
from onnxlens.exporter.atomic import write_bytes
from onnxlens.exporter.torch_internals import adapter_in
from onnxlens.exporter.types import ExportResult, TargetSpec
from onnxlens.exporter.user_key import KeyRefused, user_key
from onnxlens.exporter.versions import exporter_source_digest, interpreter_versions
from onnxlens.exporter.written import changed
from onnxlens.server.service.file_times import changed_since
from onnxlens.server.service.installed import InstalledPackages

log = logging.getLogger("onnxlens.cache")

CACHE_FORMAT = "onnxlens-result-cache"
CACHE_VERSION = 3
UNCACHEABLE_CODES = {"timeout", "crash", "output"}


def cache_file(spec: TargetSpec) -> Path:
    """<output-dir>/cache/<target>.msgpack (TargetSpec.cache_dir)."""
    return Path(spec.cache_dir) / f"{spec.safe_name}.msgpack"


def forget_verification(spec: TargetSpec) -> None:
    """Remove the target's kept verification (exporter/verify/reuse.py): the next export runs it."""
    try:
        os.unlink(spec.verification_record)
    except FileNotFoundError:
        pass
    except OSError as error:
        log.warning("could not remove %s: %s", spec.verification_record, error)


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
    def __init__(self, python: str, env: Mapping[str, str] | None = None, *, trust_foreign: bool = False) -> None:
        """`python`, `env`: the worker's interpreter and environment (None: ours).
        `trust_foreign`: use entries signed with another key too (`onnxlens check --trust-cache`)."""
        self.python = python
        self.env = env
        self.trust_foreign = trust_foreign
        self.installed = InstalledPackages(python, env)
        self._versions: tuple[str | None, dict[str, Any]] | None = None  # (installed fingerprint, versions)

    @property
    def versions(self) -> dict[str, Any]:
        """Package versions of the worker's interpreter (without importing torch), its adapter."""
        return self._versions_for(self.installed.fingerprint())

    def _versions_for(self, installed: str | None) -> dict[str, Any]:
        """The versions as of the installed packages' fingerprint `installed`: read again after
        a change (torch upgraded while the server runs selects another adapter)."""
        if self._versions is None or self._versions[0] != installed:
            versions: dict[str, Any] = dict(interpreter_versions(self.python))
            versions["torch-adapter"] = adapter_in(versions.get("torch"), self.env)
            versions["onnxlens-exporter-source"] = exporter_source_digest()
            self._versions = (installed, versions)
        return self._versions[1]

    @cached_property
    def signing_key(self) -> bytes | None:
        """This user's key (exporter/user_key.py); None: the cache is off, and the log says why."""
        try:
            return user_key()
        except KeyRefused as error:
            log.warning("result cache off: %s", error)
            return None

    def key(self, spec: TargetSpec, files: list[str], absent: list[str], installed: str | None) -> str | None:
        """The cache key of the closure `files`, the paths `absent` and the installed packages'
        fingerprint `installed`; None if a file of the closure cannot be read, or nothing can be
        said about the installed packages."""
        if installed is None:
            return None
        digest = hashlib.sha256()
        header = {"spec": spec.to_dict(), "installed": installed, "versions": self._versions_for(installed),
                  "format": CACHE_VERSION}
        digest.update(json.dumps(header, sort_keys=True, default=str).encode())
        for path in sorted(files):
            try:
                content = Path(path).read_bytes()
            except OSError:
                return None
            digest.update(path.encode() + b"\0" + hashlib.sha256(content).digest())
        for path in sorted(absent):
            digest.update(path.encode() + (b"\0present" if os.path.lexists(path) else b"\0absent"))
        return digest.hexdigest()

    def _signature(self, payload: bytes) -> bytes | None:
        key = self.signing_key
        return hmac.new(key, payload, hashlib.sha256).digest() if key is not None else None

    def _trusted(self, path: Path) -> dict[str, Any] | None:
        """The stored payload ({key, files, absent, result}) of the entry at `path` if it is trusted
        (signed here, or another key's with trust_foreign), else None. Raises for a missing or
        damaged file."""
        entry = msgpack.unpackb(path.read_bytes(), raw=False)
        if entry.get("format") != CACHE_FORMAT or entry.get("version") != CACHE_VERSION:
            return None
        payload, signature = entry["payload"], entry["signature"]
        expected = self._signature(payload)
        signed_here = expected is not None and hmac.compare_digest(expected, signature)
        if not signed_here and not self.trust_foreign:
            if expected is not None:
                log.info("ignoring %s: not written by onnxlens for this user on this machine", path)
            return None
        return msgpack.unpackb(payload, raw=False)

    def load(self, spec: TargetSpec) -> ExportResult | None:
        """The cached result if it is trusted and still valid for the files as they are now, else None."""
        path = cache_file(spec)
        try:
            stored = self._trusted(path)
            if stored is None:
                return None
            files, absent, stored_key, data = stored["files"], stored["absent"], stored["key"], stored["result"]
            if not files or self.key(spec, files, absent, self.installed.fingerprint()) != stored_key:
                return None
            result = ExportResult.from_dict(data)
        except FileNotFoundError:
            return None
        except Exception as error:  # noqa: BLE001 - any damage to the file is just a miss
            log.info("ignoring unreadable cache file %s: %s", path, error)
            return None
        if not _written_files_intact(result, path):
            return None
        result.cached = True
        return result

    def stored_files(self, spec: TargetSpec) -> list[str] | None:
        """The files the target's trusted cached result depended on when it was stored, whether
        or not they changed since, and the absent paths whose appearance it depends on (None: no
        trusted, readable entry): which targets a changed file reaches (server/check/reach.py)."""
        try:
            stored = self._trusted(cache_file(spec))
            return [str(path) for path in (*stored["files"], *stored["absent"])] if stored is not None else None
        except Exception:  # noqa: BLE001 - a missing or damaged entry: the closure is unknown
            return None

    def store(self, spec: TargetSpec, result: ExportResult, *, job_started_ns: int, installed: str | None) -> bool:
        """Remember `result` for the files as they are now. Returns whether it was stored.

        `installed`: the installed packages' fingerprint the job's worker was started under.
        Not stored if any file of the closure changed after the job started, a path the job
        found absent exists, or the installed packages are not those: the export may have read
        the older content, and the cache must never pair new files or packages with old results.
        Nor is a saved export's result that did not complete (verified:
        `ExportResult.finishing_seconds`): the next export verifies it again.
        """
        if not result.closure or any(f.code in UNCACHEABLE_CODES for f in result.findings):
            return False
        if result.status == "ok" and result.finishing_seconds is None:
            return False
        if installed is None or self.installed.fingerprint() != installed:
            return False
        files = sorted(set(result.closure) | referenced_files(spec))
        absent = sorted(set(result.absent))
        try:
            if any(changed_since(os.stat(f), job_started_ns) for f in files):
                return False
        except OSError:
            return False
        if any(os.path.lexists(path) for path in absent):
            return False
        key = self.key(spec, files, absent, installed)
        if key is None:
            return False
        data = result.to_dict()
        data["cached"] = False
        payload = msgpack.packb({"key": key, "files": files, "absent": absent, "result": data},
                                use_bin_type=True, default=str)
        signature = self._signature(payload)
        if signature is None:
            return False
        entry = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "payload": payload, "signature": signature}
        path = cache_file(spec)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_bytes(path, msgpack.packb(entry, use_bin_type=True))
        except OSError as error:
            log.warning("could not write cache file %s: %s", path, error)
            return False
        return True


def _written_files_intact(result: ExportResult, entry: Path) -> bool:
    """Every file the export wrote is still the file it wrote (exporter/written.py); a result
    that says a model was written names it among them."""
    model = result.onnx or result.graph_onnx  # a weights-free model writes its graph only
    if result.status == "ok" and model not in {file.path for file in result.written}:
        return False
    for file in result.written:
        problem = changed(file)
        if problem is not None:
            log.warning("%s changed since onnxlens wrote it (%s): not using the cached result %s, exporting again",
                        file.path, problem, entry)
            return False
    return True

