"""The result cache trusts only what this user wrote on this machine, for the files on disk
(server/service/cache.py): real exports through the warm worker, then the cache file and the model's
files changed the ways someone could change them to fake a pass — an entry edited by hand (a failed export
turned into a pass), an entry signed with another key (another user, another machine: a
committed or restored cache), a .onnx swapped for other bytes, its weights rewritten in place
with the old mtime put back. Each is a miss (the caller exports again); an identical copy of the
files (a restore) is still a hit. `onnxlens check --trust-cache` accepts the other key's entry.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from onnxlens.exporter.onnx_pair import named_data_file
from onnxlens.exporter.user_key import KEY_BYTES, key_path
from onnxlens.server.service.cache import ResultCache, cache_file
from onnxlens.server.service.exports import ExportService
from tests.support.net_workspace import BROKEN, NET, cache_entry, rewrite_cache_entry
from tests.worker.worker_helpers import spec_for, write_model

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]  # the export worker as processes


@pytest.fixture(autouse=True)
def private_key_dir(tmp_path_factory, monkeypatch):
    """Each test's cache key in a home of its own (the user's real ~/.cache is left alone)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))


async def _stored(service, root: Path, source: str, *, ok: bool):
    write_model(root, "net.py", source)
    spec = spec_for(root, "net.py", model="build")
    result = await service.export(spec)
    assert (result.status == "ok") is ok, result.findings
    # Stored as a service does after a job, signed with this test's key (the module's worker
    # service signed with the key of the test that first used it).
    cache = ResultCache(service.python)
    assert cache.store(spec, result, job_started_ns=time.time_ns(), installed=cache.installed.fingerprint()) is True
    assert ExportService(use_cache=True).cached(spec) is not None  # a hit, before anything is changed
    return spec, result


async def test_the_key_is_private_and_outside_the_workspace(service, tmp_path):
    spec, _ = await _stored(service, tmp_path, NET, ok=True)
    key = key_path()
    assert key.is_file() and not key.is_relative_to(tmp_path)
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    assert key.stat().st_size == KEY_BYTES


async def test_a_failed_export_edited_into_a_pass_is_not_trusted(service, tmp_path, caplog):
    """The forgery: the entry of a broken model (its key matches the files as they are)
    given the result of the last good export, whose model is still on disk and intact."""
    good_spec, _ = await _stored(service, tmp_path, NET, ok=True)
    _, good = cache_entry(cache_file(good_spec))
    spec, _ = await _stored(service, tmp_path, BROKEN, ok=False)
    entry, payload = cache_entry(cache_file(spec))
    payload["result"] = good["result"]
    rewrite_cache_entry(cache_file(spec), entry, payload, key=None)  # the forger cannot sign: the key is not in the workspace

    with caplog.at_level(logging.INFO, logger="onnxlens.cache"):
        assert ExportService(use_cache=True).cached(spec) is None
    assert "not written by onnxlens for this user on this machine" in caplog.text
    # Everything else about it would pass: only the signature tells.
    forged = ExportService(use_cache=True, trust_cache=True).cached(spec)
    assert forged is not None and forged.status == "ok" and not forged.findings


async def test_an_entry_signed_with_another_key_is_ignored_unless_trusted(service, tmp_path):
    """Another user's, or a CI run's restored cache: honest, but not this user's own."""
    spec, exported = await _stored(service, tmp_path, NET, ok=True)
    entry, payload = cache_entry(cache_file(spec))
    rewrite_cache_entry(cache_file(spec), entry, payload, key=os.urandom(KEY_BYTES))

    assert ExportService(use_cache=True).cached(spec) is None
    trusted = ExportService(use_cache=True, trust_cache=True).cached(spec)
    assert trusted is not None and trusted.cached and trusted.onnx == exported.onnx


async def test_a_swapped_onnx_is_not_the_cached_result(service, tmp_path, caplog):
    spec, exported = await _stored(service, tmp_path, NET, ok=True)
    onnx = Path(exported.onnx)
    swapped = onnx.with_name("swapped.tmp")
    swapped.write_bytes(onnx.read_bytes().replace(b"linear", b"LINEAR"))  # another model's bytes
    os.replace(swapped, onnx)

    with caplog.at_level(logging.WARNING, logger="onnxlens.cache"):
        assert ExportService(use_cache=True).cached(spec) is None
        assert ExportService(use_cache=True, trust_cache=True).cached(spec) is None  # trust is in the entry, not the files
    assert f"{onnx} changed since onnxlens wrote it (its content changed)" in caplog.text


async def test_weights_rewritten_in_place_with_the_old_mtime_are_found(service, tmp_path):
    spec, exported = await _stored(service, tmp_path, NET, ok=True)
    data = named_data_file(exported.onnx)
    assert str(data) == exported.onnx_data
    before = data.stat()
    with open(data, "r+b") as handle:  # same size, other numbers
        handle.write(b"\0" * 64)
    os.utime(data, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert data.stat().st_size == before.st_size and data.stat().st_mtime_ns == before.st_mtime_ns

    assert ExportService(use_cache=True).cached(spec) is None


async def test_an_identical_copy_of_the_files_is_still_a_hit(service, tmp_path):
    """A restore (another inode, the same bytes): the digest decides, not the inode."""
    spec, exported = await _stored(service, tmp_path, NET, ok=True)
    for path in (Path(exported.onnx), Path(exported.onnx_data)):
        copy = path.with_name(path.name + ".copy")
        shutil.copy2(path, copy)
        os.replace(copy, path)

    hit = ExportService(use_cache=True).cached(spec)
    assert hit is not None and hit.cached


async def test_a_key_others_can_read_turns_the_cache_off(service, tmp_path, caplog):
    spec, _ = await _stored(service, tmp_path, NET, ok=True)
    key_path().chmod(0o644)

    with caplog.at_level(logging.WARNING, logger="onnxlens.cache"):
        cache = ResultCache(ExportService().python)
        assert cache.load(spec) is None
    assert "can be read or written by others" in caplog.text
