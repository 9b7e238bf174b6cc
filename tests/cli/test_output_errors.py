"""An output path that cannot be written is an `output` finding naming the path and the
operating system's error (pipeline/output/write_errors.py), on the target's line of the config, never a
`translation` "please report this": the real CLI process, a real directory where the model
should go, and a real directory that refuses writes.

The full disk and the read-only file system are in tests/faults/test_output_faults.py (a small
tmpfs). "Permission denied" cannot be reached for real when the suite runs as root (root
ignores permission bits), so the refusing directory is made immutable (`chattr +i`), which
refuses root too, with EPERM; as another user it is a directory without write permission,
EACCES.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.net_workspace import CONFIG, check_json, write_workspace
from tests.support.workspace import line_of, write

pytestmark = pytest.mark.slow  # onnxlens as a subprocess, exporting through its worker


def the_output_finding(root: Path, target: dict) -> dict:
    [finding] = target["diagnostics"]
    assert finding["code"] == "output" and finding["severity"] == "error", finding
    assert finding["stage"] == "save"
    assert "please report" not in finding["message"]
    assert (finding["file"], finding["line"]) == ("pyproject.toml", line_of(root / "pyproject.toml", "[[tool.onnxlens.target]]"))
    return finding


def test_an_output_path_that_is_a_directory(tmp_path):
    root = tmp_path / "ws"
    write_workspace(root)
    write(root / "pyproject.toml", CONFIG.replace('name = "net"', 'name = "net"\noutput = "out/net.onnx"'))
    (root / "out" / "net.onnx").mkdir(parents=True)
    (root / "out" / "net.onnx" / "kept.txt").write_text("mine")

    run = check_json(root, root.parent / "user-cache")
    assert run.status == 1 and run.target["status"] == "failed" and run.target["onnx"] is None
    finding = the_output_finding(root, run.target)
    assert f"cannot write {root / 'out' / 'net.onnx'}: Is a directory (EISDIR)" in finding["message"]
    assert "that path is a directory: set the target's `output` to a file path" in finding["message"]
    # Nothing was left beside it: not the staging directory, not the weights no graph names.
    assert sorted(p.name for p in (root / "out").iterdir()) == ["net.onnx"]
    assert (root / "out" / "net.onnx" / "kept.txt").read_text() == "mine"


@pytest.fixture
def refusing_output(tmp_path):
    """The workspace with its output directory refusing every write."""
    root = tmp_path / "ws"
    write_workspace(root)
    out = root / ".onnxlens"
    for sub in ("reports", "cache"):
        (out / sub).mkdir(parents=True)
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("as root, needs chattr to make a directory refuse writes")
        made = subprocess.run(["chattr", "+i", str(out)], capture_output=True, text=True)
        if made.returncode:
            pytest.skip(f"chattr +i is not possible here: {made.stderr.strip()}")
        yield root, "Operation not permitted (EPERM)"
        subprocess.run(["chattr", "-i", str(out)], check=True)
    else:
        out.chmod(0o555)
        yield root, "Permission denied (EACCES)"
        out.chmod(0o755)


def test_an_output_directory_that_refuses_writes(refusing_output):
    root, error = refusing_output
    run = check_json(root, root.parent / "user-cache")
    assert run.status == 1 and run.target["status"] == "failed"
    finding = the_output_finding(root, run.target)
    assert f"cannot write {root / '.onnxlens' / 'net.onnx'}: {error}" in finding["message"]
    assert "fix the permissions, or set `output-dir`" in finding["message"]
