"""Fault matrix, trust rows: the server runs user code only for configured projects of the
workspace folders the editor opened.

Opening (not saving) a model file of a project outside the workspace folders imports nothing:
its module would leave a marker when imported, and none appears; the server says why in its log.
The same didOpen of a project nested inside a workspace folder (a monorepo's folder without a
config of its own) does export it, so the absence of the marker is not the absence of a didOpen
handler. Before the fix the outside project's models were imported on didOpen.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.faults import HELPER_TEMPLATE, Session, exported, make_fault_workspace, net_source, pyproject
from tests.support.workspace import write

pytestmark = pytest.mark.slow  # the language server and the export worker as processes


def marking_project(root: Path, marker: Path) -> Path:
    """A configured project whose model module leaves `marker` when imported; its model file."""
    model = root / "models" / "marking.py"
    write(root / "models" / "__init__.py", "")
    write(root / "models" / "helper.py", HELPER_TEMPLATE)
    write(model, f"open({str(marker)!r}, 'a').write('imported\\n')\n" + net_source(3))
    write(root / "pyproject.toml", pyproject([{"name": "marking", "model": "models/marking.py:build_model",
                                               "inputs": "models/marking.py:example_inputs"}], verify=False))
    return model


@pytest.mark.asyncio
async def test_opening_a_file_of_a_project_elsewhere_runs_nothing(tmp_path):
    ws = make_fault_workspace(tmp_path / "opened")
    outside_marker = ws.scratch / "outside-imported"
    outside = marking_project(tmp_path / "elsewhere", outside_marker)
    nested_marker = ws.scratch / "nested-imported"
    monorepo = tmp_path / "monorepo"
    nested = marking_project(monorepo / "nested", nested_marker)

    session = await Session.launch(ws.root, monorepo)
    try:
        await session.wait_for(lambda: exported(ws.onnx, 1), "the workspace's own export")
        session.open(outside)
        await session.wait_for(lambda: any("outside the workspace folders" in m.message and str(outside.parent.parent) in m.message
                                           for m in session.log_messages), "the server's note about the outside project")
        session.open(nested)  # inside a workspace folder: a project of it
        await session.wait_for(nested_marker.exists, "the nested project's export")
        await session.wait_idle()
        assert not outside_marker.exists(), "opening a file of a project outside the workspace folders imported its model"
        stats = await session.stats()
        assert [p["config"] for p in stats["projects"]] == [str(ws.config), str(nested.parent.parent / "pyproject.toml")]
    finally:
        await session.close()
