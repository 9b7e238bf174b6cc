"""Fault matrix, isolation rows: a workspace whose own modules are named like the standard
library (json.py, logging.py, typing.py) and a dependency of the server and the worker
(msgpack.py). Each leaves a marker and raises when imported.

The server, started as editors start it (`python -I -m onnxlens.server`, in the workspace),
answers `initialize` and exports the workspace's target correctly; `onnxlens check` run in the
workspace does too; no shadowing module runs anywhere: not in the server, not in the export
worker's zygote (started in the filesystem root, exporter/launch.py), not in the export child,
whose user code finds the real modules already imported. Before the fix the extension's
`python -m onnxlens.server` ran a workspace `json.py` in the server, and `logging.py` stopped it
before it answered `initialize`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.support.faults import Session, exported, make_fault_workspace, net_source
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

SHADOWS = ("json", "logging", "typing", "msgpack")
ONNXLENS = Path(sys.executable).with_name("onnxlens")


def shadowing_workspace(base: Path):
    ws = make_fault_workspace(base)
    marker = ws.scratch / "SHADOW-RAN"
    for name in SHADOWS:
        write(ws.root / f"{name}.py", f"import os\nopen({str(marker)!r}, 'a').write('{name} in ' + str(os.getpid()) + '\\n')\n"
                                      f"raise SystemExit('the workspace {name}.py was imported')\n")
    # the model says what PYTHONSAFEPATH its process sees: the user's, not the zygote's
    seen = ws.scratch / "safe-path-seen"
    write(ws.net, net_source(1, factory=f"open({str(seen)!r}, 'w').write(repr(os.environ.get('PYTHONSAFEPATH')))"))
    return ws, marker, seen


def ran(marker: Path) -> str:
    return marker.read_text() if marker.exists() else ""


@pytest.mark.asyncio
async def test_the_server_imports_nothing_from_the_workspace(tmp_path, monkeypatch):
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    ws, marker, seen = shadowing_workspace(tmp_path)
    session = await Session.launch(ws.root)  # in the workspace, as editors start it
    try:
        session.open(ws.net)
        await session.wait_for(lambda: exported(ws.onnx, 1), "the export of the shadowing workspace's target")
        assert not session.all_diagnostics(), session.describe()
        stats = await session.stats()
        zygote = psutil.Process(stats["worker_pid"])
        assert zygote.cwd() == os.path.abspath(os.sep), "the worker runs in the workspace"
        assert seen.read_text() == "None", "user code got the zygote's PYTHONSAFEPATH"
        assert not ran(marker), f"workspace modules ran: {ran(marker)}"
    finally:
        await session.close()


def test_check_run_in_the_workspace_imports_nothing_from_it(tmp_path):
    ws, marker, _ = shadowing_workspace(tmp_path)
    result = subprocess.run([str(ONNXLENS), "check", "--no-cache"], cwd=ws.root, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert exported(ws.onnx, 1)
    assert not ran(marker), f"workspace modules ran: {ran(marker)}"
