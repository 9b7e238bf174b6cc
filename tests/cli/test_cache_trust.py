"""`onnxlens check` cannot be made to pass by what is on disk: the real CLI process,
real exports, a cache key of its own per "user" (XDG_CACHE_HOME).

* A broken model's cache entry given the last good result (what made `check` exit 0 on a
  broken model): ignored, the model is exported again, exit status 1.
* A cache written with another user's key (a committed cache, one restored in CI): ignored
  unless `--trust-cache`.
* The last good model in a shared output directory swapped by another user (a real other uid,
  `nobody`, where this test runs as root): found, exported again, the model rewritten.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from onnxlens.exporter.onnx_pair import named_data_file
from tests.support.net_workspace import (BROKEN, CACHE_ENTRY, cache_entry, check_json, rewrite_cache_entry,
                                         write_workspace)
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


@pytest.fixture
def workspace():
    """Under a directory every user may enter (pytest's own are root's only): the other user of
    the swap test must reach the shared output directory."""
    root = Path(tempfile.mkdtemp(prefix="onnxlens-shared-"))
    root.chmod(0o755)
    write_workspace(root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def test_a_broken_models_entry_given_the_last_good_result_does_not_pass(workspace, tmp_path):
    user = tmp_path / "user"
    good = check_json(workspace, user)
    assert good.status == 0 and good.target["status"] == "ok" and not good.target["cached"]
    entry_path = workspace / CACHE_ENTRY
    good_result = cache_entry(entry_path)[1]["result"]

    write(workspace / "net.py", BROKEN)
    broken = check_json(workspace, user)
    assert broken.status == 1 and broken.target["status"] == "failed"
    entry, payload = cache_entry(entry_path)
    payload["result"] = good_result  # the key still matches the broken files
    rewrite_cache_entry(entry_path, entry, payload)

    run = check_json(workspace, user)
    assert run.status == 1, "a forged pass"
    assert run.target["status"] == "failed" and run.target["cached"] is False  # exported again
    assert [d["code"] for d in run.target["diagnostics"]] == [d["code"] for d in broken.target["diagnostics"]]


def test_another_users_cache_is_ignored_unless_trusted(workspace, tmp_path):
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    assert check_json(workspace, theirs).target["cached"] is False
    assert check_json(workspace, theirs).target["cached"] is True
    trusted = check_json(workspace, mine, "--trust-cache")
    assert trusted.status == 0 and trusted.target["cached"] is True
    own = check_json(workspace, mine)
    assert own.status == 0 and own.target["cached"] is False


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as another user (nobody)")
def test_a_model_swapped_by_another_user_is_found_and_exported_again(workspace, tmp_path):
    user = tmp_path / "user"
    output = workspace / ".onnxlens"
    output.mkdir(mode=0o777)
    output.chmod(0o777)  # a shared output directory: group or world writable, no sticky bit
    first = check_json(workspace, user)
    assert first.status == 0
    onnx = workspace / first.target["onnx"]
    ours = onnx.read_bytes()
    theirs = ours.replace(b"linear", b"LINEAR")
    swap = ("import os, sys; open(sys.argv[1] + '.theirs', 'wb').write(bytes.fromhex(sys.argv[2])); "
            "os.replace(sys.argv[1] + '.theirs', sys.argv[1])")
    # The system's Python: the other user cannot enter this checkout's virtual environment.
    python = shutil.which("python3", path="/usr/bin:/bin") or pytest.skip("no /usr/bin/python3 for the other user")
    subprocess.run([python, "-c", swap, str(onnx), theirs.hex()], user="nobody", group="nogroup",
                   check=True, capture_output=True)
    assert onnx.stat().st_uid != 0 and onnx.read_bytes() == theirs

    again = check_json(workspace, user)
    assert again.status == 0 and again.target["cached"] is False
    assert f"{onnx} changed since onnxlens wrote it (its content changed)" in again.stderr
    # Written again by this user (the model's random init gives new weights, so not `ours` byte for byte).
    assert onnx.read_bytes() != theirs and onnx.stat().st_uid == 0 and named_data_file(onnx).is_file()
