"""Fault matrix, user-code rows: whatever the user's model does on a save, the server keeps
answering, the diagnostic lands where the problem is, the last good .onnx is untouched, no
half-written file or process is left, and the next normal save exports again.

One real server for the whole module (each row is a file edit + save, as in an editor), a real
worker, real torch. Every row ends by saving a good model with a new output width and waiting
for that exact model in the .onnx, so rows cannot pass on a previous row's result.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest
import pytest_asyncio

from tests.support.faults import (
    HELPER_TEMPLATE,
    Session,
    alive,
    good_save_exports,
    leftover_temp_files,
    make_fault_workspace,
    marked_line,
    net_source,
    onnx_files,
    onnx_width,
    read_pid,
    sigkill,
    wait_gone,
)

pytestmark = pytest.mark.slow  # the language server and the export worker as processes

TIMEOUT_S = 6  # the workspace's `timeout`: small so the three loop rows stay quick
# `memory-limit` (MB) caps the address space an export job may add to what the zygote already
# maps (torch & co.: ~0.9-3 GB of mappings). 512 MB is plenty for these tiny models and is hit
# long before the blow-up below stops itself at 1.8 GB, the most this test ever allocates even
# if the cap were not enforced (the machine is shared).
MEMORY_LIMIT_MB = 512

PID = "open({pidfile!r}, 'w').write(str(os.getpid()))"


@dataclass
class Row:
    id: str
    code: str
    module: str = ""  # code injected at module level of models/net.py
    factory: str = ""  # ... in build_model()
    forward: str = ""  # ... in Net.forward()
    inputs: str = ""  # ... in example_inputs()
    helper: str | None = None  # a replacement models/helper.py
    at_line: bool = True  # the diagnostic must be on the `# FAULT` line
    kill_from_outside: bool = False  # the test SIGKILLs the job while it sleeps
    message: str | None = None  # a word the message must contain
    also: str | None = None  # another acceptable code


ROWS = [
    Row("syntax-error-in-model", "import", module="x = = 1  # FAULT"),
    Row("syntax-error-in-imported-helper", "import",
        helper=HELPER_TEMPLATE.replace("return torch.relu(x)", "return torch.relu(x) +  # FAULT")),
    Row("import-error", "import", module="import onnxlens_no_such_module  # FAULT"),
    Row("exception-at-import", "import",
        module=PID + "\nraise RuntimeError('broken at import time')  # FAULT"),
    Row("exception-in-model-factory", "setup",
        factory=PID + "\nraise ValueError('bad hidden size')  # FAULT"),
    Row("exception-in-inputs-factory", "setup",
        inputs=PID + "\nraise ValueError('no sample batch')  # FAULT"),
    Row("infinite-loop-at-import", "timeout", module=PID + "\nwhile True: pass  # FAULT"),
    Row("infinite-loop-in-factory", "timeout", factory=PID + "\nwhile True: pass  # FAULT"),
    Row("infinite-loop-in-forward", "timeout", forward=PID + "\nwhile True: pass  # FAULT"),
    # faulthandler names the line of a segfault, so the crash is expected there
    Row("segfault", "crash", factory=PID + "\nimport ctypes; ctypes.string_at(0)  # FAULT"),
    # the worker intercepts os._exit to dump the stack first, so that line is known too
    Row("os-_exit", "crash", factory=PID + "\nos._exit(3)  # FAULT"),
    # SystemExit is an exception the child can catch: the engine reports it as `setup` at the
    # line (more precise than `crash`, which it may also be)
    Row("sys-exit", "crash", factory=PID + "\nsys.exit(3)  # FAULT", also="setup"),
    Row("sigkill-of-the-child", "crash", factory=PID + "\ntime.sleep(120)  # FAULT",
        at_line=False, kill_from_outside=True),
    Row("memory-blow-up", "crash", message="memory", factory=PID + "\n" + (
        "hog = []\n"
        "for _ in range(36):\n"
        "    hog.append(bytearray(50 * 2**20))  # FAULT\n"
        "raise RuntimeError('allocated 1.8 GB: memory-limit was not enforced')")),
]


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    return make_fault_workspace(
        tmp_path_factory.mktemp("user-code"),
        settings={"timeout": TIMEOUT_S},
        target={"memory-limit": MEMORY_LIMIT_MB},
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(ws):
    session = await Session.launch(ws.root)
    session.open(ws.net)
    session.open(ws.helper)
    session.save(ws.net)  # the first export: the known-good state every row starts from
    await session.wait_clean_export(ws.onnx, 1, ws.net, ws.helper)
    yield session
    await session.close()


async def recover(session: Session, ws, *, restore_helper: bool) -> None:
    """The next normal save works: a good model with a new width is exported and every
    onnxlens diagnostic is gone."""
    if restore_helper:
        session.save(ws.helper, HELPER_TEMPLATE)
    await good_save_exports(session, ws, ws.helper)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.id)
async def test_user_code_fault(session: Session, ws, row: Row):
    await session.wait_idle()  # nothing in flight may touch the outputs after the snapshot
    onnx_before = onnx_files(ws.onnx)
    width_before = onnx_width(ws.onnx)
    reports_before = sorted(ws.out.rglob("*.md"))  # reports are rewritten per export, never lost
    ws.pidfile.unlink(missing_ok=True)

    fill = lambda code: code.format(pidfile=str(ws.pidfile))  # noqa: E731
    if row.helper is not None:
        faulty, text = ws.helper, row.helper
    else:
        faulty = ws.net
        text = net_source(ws.next_version(), module=fill(row.module), factory=fill(row.factory),
                          forward=fill(row.forward), inputs=fill(row.inputs))
    session.save(faulty, text)

    if row.kill_from_outside:
        pid = await session.wait_for(lambda: read_pid(ws.pidfile), "the job to start")
        sigkill(pid)

    if row.at_line:
        diagnostic = await session.wait_diagnostic(faulty, row.code, marked_line(text),
                                                   also=row.also)
    else:
        _, diagnostic = await session.wait_code_anywhere(row.code)
    assert diagnostic.severity == 1  # Error
    assert diagnostic.message.strip()
    assert "Traceback (most recent call last)" not in diagnostic.message[:200]
    if row.message:
        assert row.message in diagnostic.message.lower(), diagnostic.message

    # the server keeps answering
    await session.ping(ws.net)
    # the last good .onnx is intact, byte for byte and untouched, and still loads
    for artifact in onnx_before:  # the .onnx and its weights file, byte for byte, untouched
        artifact.assert_unchanged()
    assert onnx_width(ws.onnx) == width_before
    await session.wait_idle()  # at rest: no save in flight
    assert not leftover_temp_files(ws.out)
    for report in reports_before:
        assert report.exists() and report.stat().st_size > 0, f"{report} lost or truncated"
    # the job's process is gone (killed or exited, and reaped by the worker)
    pid = read_pid(ws.pidfile)
    if pid is not None:
        left = await asyncio.to_thread(
            wait_gone, {(pid, _create_time(pid))} if alive(pid) else set())
        assert not left, f"the failed job's process is still there: {left}"

    await recover(session, ws, restore_helper=row.helper is not None)


def _create_time(pid: int) -> float:
    import psutil

    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return 0.0


@pytest.mark.asyncio(loop_scope="module")
async def test_zygote_killed_between_jobs_is_restarted(session: Session, ws):
    workers = session.worker_processes()
    assert workers, "the server has no worker process to kill"
    killed = {(p.pid, p.create_time()) for p in workers}
    for proc in workers:
        proc.kill()
    assert not await asyncio.to_thread(wait_gone, killed)

    await recover(session, ws, restore_helper=False)
    assert session.worker_processes(), "no worker after the restart"
    assert {p.pid for p in session.worker_processes()}.isdisjoint({pid for pid, _ in killed})


@pytest.mark.asyncio(loop_scope="module")
async def test_model_printing_megabytes_does_not_block(session: Session, ws):
    """Megabytes on the job's stdout/stderr must not reach the LSP stream (the server's stdout)
    nor fill a pipe nobody reads: the export finishes and the protocol stays intact."""
    version = ws.next_version()
    flood = ("sys.stdout.write('o' * 4_000_000 + '\\n'); sys.stdout.flush()\n"
             "sys.stderr.write('e' * 4_000_000 + '\\n'); sys.stderr.flush()\n"
             "print('Content-Length: 5\\r\\n\\r\\n{}}}}' * 20_000)")
    session.save(ws.net, net_source(version, module=flood, forward="print('x' * 1_000_000)"))
    await session.wait_clean_export(ws.onnx, version, ws.net, ws.helper)
    await session.ping(ws.net)
    assert session.error is None, f"the protocol stream broke: {session.error}"


@pytest.mark.asyncio(loop_scope="module")
async def test_zz_shutdown_leaves_no_process(session: Session, ws):
    """After every row above: shutdown + exit ends the server, the worker and every child."""
    assert len(session.seen) >= 2, "expected to have seen the server and its worker"
    left = await session.leftovers_after_shutdown()
    assert not left, f"processes left after shutdown: {left}"
    assert session._server.returncode == 0
