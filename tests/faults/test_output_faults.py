"""Fault matrix, output rows: the output directory stops being writable, or the disk fills up
in the middle of writing the .onnx. The user gets an `output` error naming the path and the
operating system's error, the previous .onnx is intact, no temp file is left, the report on
disk never passes for this export's when it is an earlier one's, and once the disk is fine the
next save works.

Simulated honestly with a real file system: the output directory is a 512 KiB tmpfs mounted for
this module. "Disk full" = a model whose weights (1+ MiB) do not fit in it; "not writable" = the
same tmpfs remounted read-only (root ignores permission bits, so chmod would prove nothing).
Needs root and mount(2); where that is not available the module is skipped with that reason.
"""

from __future__ import annotations

import os
import subprocess

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.support.faults import (
    Session,
    good_save_exports,
    leftover_temp_files,
    make_fault_workspace,
    net_source,
    onnx_files,
)

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

TMPFS_SIZE = "512k"
BIG_INPUT = 65536  # Linear(65536, VERSION) weights: >= 1 MiB, more than the whole tmpfs


def _mount(*args: str) -> None:
    subprocess.run(["mount", *args], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    ws = make_fault_workspace(tmp_path_factory.mktemp("output"), out="out")
    ws.out.mkdir()
    try:
        _mount("-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(ws.out))
    except (OSError, subprocess.CalledProcessError) as error:
        pytest.skip(f"cannot mount a small tmpfs for the output dir here (needs root): {error}")
    yield ws
    subprocess.run(["umount", "-l", str(ws.out)], check=False)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(ws):
    session = await Session.launch(ws.root)
    session.open(ws.net)
    session.save(ws.net)
    await session.wait_clean_export(ws.onnx, 1, ws.net)
    yield session
    await session.close()


def assert_output_finding(diagnostic, ws, error: str) -> None:
    """An `output` error naming the model's path and the operating system's error, not a bug of ours."""
    assert diagnostic.code == "output", diagnostic
    assert f"cannot write {ws.out / 'net.onnx'}: {error}" in diagnostic.message
    assert "please report" not in diagnostic.message and "Traceback" not in diagnostic.message


async def wait_error_mentioning(session: Session, words: tuple[str, ...]):
    def match():
        for path, diags in session.all_diagnostics().items():
            for d in diags:
                if d.severity == 1 and any(w in d.message for w in words):
                    return path, d
        return None

    return await session.wait_for(match, f"an error diagnostic mentioning one of {words}")


@pytest.mark.asyncio(loop_scope="module")
async def test_disk_full_during_save(session: Session, ws):
    await session.wait_idle()
    onnx_before = onnx_files(ws.onnx)
    session.save(ws.net, net_source(ws.next_version(), width=BIG_INPUT))

    _, diagnostic = await wait_error_mentioning(
        session, ("No space left on device", "disk full", "ENOSPC"))
    assert_output_finding(diagnostic, ws, "No space left on device (ENOSPC)")
    await session.ping(ws.net)
    for artifact in onnx_before:
        artifact.assert_unchanged()
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out), "a half-written file was left on the full disk"
    # The staged weights went with the failed save, so the small report fits again: it is this
    # export's, and says it failed and why.
    report = ws.out / "reports" / "net.md"
    text = report.read_text()
    assert "Status: **failed**" in text and "No space left on device (ENOSPC)" in text
    await session.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.openReport",
                                                                           arguments=["net"]))
    assert session.shown_documents[-1].uri == report.resolve().as_uri()

    await good_save_exports(session, ws)


@pytest.mark.asyncio(loop_scope="module")
async def test_output_dir_not_writable(session: Session, ws):
    await session.wait_idle()
    onnx_before = onnx_files(ws.onnx)
    _mount("-o", "remount,ro", str(ws.out))
    try:
        session.save(ws.net, net_source(ws.next_version()))
        _, diagnostic = await wait_error_mentioning(
            session, ("Read-only file system", "not writable", "EROFS"))
        assert_output_finding(diagnostic, ws, "Read-only file system (EROFS)")
        await session.ping(ws.net)
        for artifact in onnx_before:
            artifact.assert_unchanged()
        # Neither this export's report nor the removal of the last one can be written: the one on
        # disk says "ok" about an earlier export, and is not shown as this one's.
        await session.wait_idle()
        assert "Status: **ok**" in (ws.out / "reports" / "net.md").read_text()
        shown = len(session.shown_documents)
        with pytest.raises(JsonRpcException, match="describes an earlier export of net, not its latest"):
            await session.workspace_execute_command_async(lsp.ExecuteCommandParams(
                command="onnxlens.openReport", arguments=["net"]))
        assert len(session.shown_documents) == shown
    finally:
        _mount("-o", "remount,rw", str(ws.out))

    await good_save_exports(session, ws)
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out)
    assert os.statvfs(ws.out).f_bavail > 0


@pytest.mark.asyncio(loop_scope="module")
async def test_zz_shutdown_leaves_no_process(session: Session, ws):
    left = await session.leftovers_after_shutdown()
    assert not left, f"processes left after shutdown: {left}"
