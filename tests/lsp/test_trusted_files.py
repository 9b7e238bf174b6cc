"""What the editor shows from disk is what onnxlens wrote: the real server through a
VS Code-capable client, a cache key of its own (XDG_CACHE_HOME).

* A broken model whose cache entry was given the last good result (`onnxlens check` wrote both
  entries, the test edited the second): opening the workspace shows the model's real error, not
  a clean export.
* "Open export report" and "Show exported program" open only regular files inside the output
  directory: a report replaced by a symbolic link (to /etc/passwd, or to another file of the
  output directory), a reports directory that is a link out of it, and a report left by an
  earlier export are refused with a message saying which; the genuine report opens.
"""

from __future__ import annotations

import asyncio
import re

import pytest
import pytest_asyncio
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException

from tests.support.lsp import Client
from tests.support.net_workspace import (BROKEN, CACHE_ENTRY, NET, cache_entry, check_json, rewrite_cache_entry,
                                         write_workspace)
from tests.support.workspace import write

# slow: the language server and the export worker as processes
pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("trusted")
    user_cache = tmp_path_factory.mktemp("xdg-cache")
    write_workspace(root)
    check_json(root, user_cache)
    good_result = cache_entry(root / CACHE_ENTRY)[1]["result"]
    write(root / "net.py", BROKEN)
    assert check_json(root, user_cache).target["status"] == "failed"
    entry, payload = cache_entry(root / CACHE_ENTRY)
    payload["result"] = good_result  # the key still matches the broken files
    rewrite_cache_entry(root / CACHE_ENTRY, entry, payload)

    client = await Client.launch(root, settings={"debounceMs": 100}, env={"XDG_CACHE_HOME": str(user_cache)})
    yield client
    await client.close()


async def _refused(client: Client, command: str, argument: str, says: str) -> None:
    shown = len(client.shown_documents)
    with pytest.raises(JsonRpcException, match=says):
        await asyncio.wait_for(client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command=command, arguments=[argument])), 10)
    assert len(client.shown_documents) == shown, "nothing opened"


async def test_a_forged_pass_in_the_cache_shows_the_real_error(client: Client):
    net = client.root / "net.py"
    client.open(net)
    _, diagnostic = await client.wait_code_anywhere("unsupported-op")
    assert "torch.special.zeta" in diagnostic.message
    stats = await client.exports_finished("net", 1)
    assert stats["per_target"]["net"].get("cached", 0) == 0, stats


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def fixed(client: Client):
    """The model fixed and exported: a genuine report and program dump of the latest export,
    and the broken export's report kept aside (an earlier export's)."""
    report = client.root / ".onnxlens" / "reports" / "net.md"
    await client.wait_for(lambda: report.is_file() and "— failed" in report.read_text(), "the failed export's report")
    earlier = report.read_text()
    finished = (await client.stats())["per_target"]["net"]["finished"]
    client.save(client.root / "net.py", NET)
    await client.exports_finished("net", finished + 1)
    await client.wait_for(lambda: "— ok" in report.read_text(), "the fixed export's report")
    return report, earlier


async def test_the_genuine_report_opens(client: Client, fixed):
    report, _ = fixed
    await client.workspace_execute_command_async(lsp.ExecuteCommandParams(command="onnxlens.openReport",
                                                                          arguments=["net"]))
    assert client.shown_documents[-1].uri == report.resolve().as_uri()


@pytest.mark.parametrize("link_to", ["/etc/passwd", "net.exported_program.txt"])
async def test_a_report_replaced_by_a_symbolic_link_is_refused(client: Client, fixed, link_to):
    report, _ = fixed
    genuine = report.read_bytes()
    report.unlink()
    report.symlink_to(link_to)
    try:
        for argument in ("net", str(report)):
            await _refused(client, "onnxlens.openReport", argument, re.escape(f"{report} is a symbolic link (to {link_to})"))
    finally:
        report.unlink()
        write(report, genuine)


async def test_a_reports_directory_linked_out_of_the_output_directory_is_refused(client: Client, fixed, tmp_path):
    report, _ = fixed
    reports = report.parent
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    for file in ("net.md", "net.exported_program.txt"):
        write(outside / file, (reports / file).read_bytes())
    aside = reports.with_name("reports.aside")
    reports.rename(aside)
    reports.symlink_to(outside)
    try:
        await _refused(client, "onnxlens.openReport", "net", "outside the onnxlens output directory once symbolic links are resolved")
        await _refused(client, "onnxlens.showExportedProgram", "net", "outside the onnxlens output directory")
    finally:
        reports.unlink()
        aside.rename(reports)


async def test_an_earlier_exports_report_is_not_shown_as_the_latest(client: Client, fixed):
    """What a failed report write leaves on a disk it cannot even remove it from (read-only)."""
    report, earlier = fixed
    genuine = report.read_bytes()
    write(report, earlier)
    try:
        await _refused(client, "onnxlens.openReport", "net", "describes an earlier export of net, not its latest")
    finally:
        write(report, genuine)


async def test_a_program_dump_replaced_by_a_symbolic_link_is_refused(client: Client, fixed):
    report, _ = fixed
    dump = report.with_name("net.exported_program.txt")
    genuine = dump.read_bytes()
    dump.unlink()
    dump.symlink_to("/etc/passwd")
    try:
        await _refused(client, "onnxlens.showExportedProgram", "net", "is a symbolic link")
    finally:
        dump.unlink()
        write(dump, genuine)
