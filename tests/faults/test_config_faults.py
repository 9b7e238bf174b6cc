"""Fault matrix, configuration and file-system rows: a broken config is a `config` diagnostic on
the offending line of the config file; a target file deleted or renamed on disk while the server
watches it gives a clear diagnostic and clears the diagnostics of the old path. The server keeps
answering, the last good .onnx is kept, and the next normal save exports again.
"""

from __future__ import annotations

import os

import pytest
import pytest_asyncio

from tests.support.faults import (Session, good_save_exports, leftover_temp_files, make_fault_workspace, marked_line,
                                  net_source, onnx_files, onnx_width)
from tests.support.workspace import line_of

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

# (id, how to break the config text, the text on the line the diagnostic must be on,
#  which occurrence of that text)
CONFIG_ROWS = [
    ("unknown-top-level-key",
     lambda text: text.replace('verify = false\n', 'verify = false\ncolour = "blue"\n'),
     'colour = "blue"', 1),
    ("unknown-target-key",
     lambda text: text.replace('name = "net"\n', 'name = "net"\nmodle = "models/net.py:Net"\n'),
     'modle =', 1),
    ("reference-without-callable",
     lambda text: text.replace('model = "models/net.py:build_model"', 'model = "models/net.py"'),
     'model = "models/net.py"', 1),
    ("reference-to-missing-file",
     lambda text: text.replace('model = "models/net.py:build_model"',
                               'model = "models/nonexistent.py:build_model"'),
     'models/nonexistent.py', 1),
    ("duplicate-target",
     lambda text: text + ('\n[[tool.onnxlens.target]]\nname = "net"\n'
                          'model = "models/net.py:build_model"\n'
                          'inputs = "models/net.py:example_inputs"\n'),
     'name = "net"', 2),
    ("invalid-toml",
     lambda text: text.replace('verify = false\n', 'verify = false\ntimeout = "unterminated\n'),
     'timeout = "unterminated', 1),
]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return make_fault_workspace(tmp_path_factory.mktemp("config"))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(ws):
    session = await Session.launch(ws.root)
    session.open(ws.config)
    session.open(ws.net)
    session.save(ws.net)
    await session.wait_clean_export(ws.onnx, 1, ws.net, ws.config)
    yield session
    await session.close()


async def next_save_works(session: Session, ws) -> None:
    await good_save_exports(session, ws, ws.config)
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("row_id, breaks, needle, occurrence", CONFIG_ROWS,
                         ids=[row[0] for row in CONFIG_ROWS])
async def test_config_fault(session: Session, ws, row_id, breaks, needle, occurrence):
    good = ws.config.read_text()
    await session.wait_idle()
    onnx_before = onnx_files(ws.onnx)
    bad = breaks(good)
    session.save(ws.config, bad)

    diagnostic = await session.wait_diagnostic(ws.config, "config", line_of(ws.config, needle, occurrence))
    assert diagnostic.severity == 1
    assert "Traceback" not in diagnostic.message
    await session.ping(ws.config)
    # a bad config never costs the user the last good model (it may be rewritten with the same
    # bytes if the rest of the config is still usable, so compare bytes, not mtime)
    assert all(a.path.read_bytes() == a.data for a in onnx_before)

    session.save(ws.config, good)
    await session.wait_for(lambda: not session.diagnostics_of(ws.config),
                           "the config diagnostic cleared after the fix")
    await next_save_works(session, ws)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("how", ["deleted", "renamed"])
async def test_target_file_deleted_or_renamed_while_watched(session: Session, ws, how):
    # first a failing state, so the old path has a diagnostic that must be cleared
    version = ws.next_version()
    failing = net_source(version, factory="raise ValueError('bad hidden size')  # FAULT")
    session.save(ws.net, failing)
    await session.wait_diagnostic(ws.net, "setup", marked_line(failing))
    await session.wait_idle()
    onnx_before = onnx_files(ws.onnx)

    # changed on disk behind the editor's back: only the server's file watcher can see it
    moved = ws.net.with_name("net_moved.py")
    if how == "deleted":
        os.remove(ws.net)
    else:
        os.rename(ws.net, moved)

    model_line = line_of(ws.config, 'model = "models/net.py:build_model"')
    await session.wait_diagnostic(ws.config, "config", model_line)
    await session.wait_for(lambda: not session.diagnostics_of(ws.net),
                           f"the diagnostics of the {how} file cleared")
    await session.ping(ws.config)
    for artifact in onnx_before:
        artifact.assert_unchanged()
    assert onnx_width(ws.onnx) > 0  # still a loadable model
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out)

    # the file comes back (recreated / renamed back): diagnostics go, the next save exports
    if how == "renamed":
        os.rename(moved, ws.net)
    await next_save_works(session, ws)
    assert not session.diagnostics_of(ws.config)


@pytest.mark.asyncio(loop_scope="module")
async def test_zz_shutdown_leaves_no_process(session: Session, ws):
    left = await session.leftovers_after_shutdown()
    assert not left, f"processes left after shutdown: {left}"
