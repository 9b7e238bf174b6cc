"""What the fault matrix (tests/faults, benchmarks/soak.py) adds to the LSP helpers: its model
(a tiny Linear whose output width tells which save was exported), snapshots of the outputs,
checks that no process is left over, and a stand-in editor in a process of its own.

* `Session`: the recording `Client` that also remembers every process the server's tree ever
  had, so a test can prove none is left over;
* `make_fault_workspace`: one target `net` (models/net.py + models/helper.py) with four places
  to inject a fault (`net_source`);
* `start_stand_in_editor`: `python -m tests.support.faults ROOT FILE` (see `_stand_in_editor`).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from tests.support.lsp import EXPORT_WAIT, REQUEST_WAIT, Client, RawServer, poll_until
from tests.support.workspace import REPO, write

EXIT_WAIT = 10.0  # "exits within seconds"
MARK = "# FAULT"  # the line a fault is injected on; tests expect the diagnostic there


# --------------------------------------------------------------------------------------------
# Files


def marked_line(text: str | bytes, mark: str = MARK) -> int:
    """1-based number of the (only) line holding `mark`."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    hits = [i for i, line in enumerate(text.splitlines(), 1) if mark in line]
    assert len(hits) == 1, f"expected one {mark!r} line, found {hits}"
    return hits[0]


def onnx_width(path: Path) -> int:
    """The fault models' marker: the width of the output, which each save sets to its VERSION."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return model.graph.output[0].type.tensor_type.shape.dim[-1].dim_value


def exported(onnx: Path, width: int) -> bool:
    """`onnx` holds the save with output width `width`."""
    try:
        return onnx.exists() and onnx_width(onnx) == width
    except Exception:  # noqa: BLE001 - a file being replaced right now; ask again
        return False


@dataclass(frozen=True)
class Artifact:
    path: Path
    data: bytes | None
    mtime_ns: int | None

    @classmethod
    def of(cls, path: Path) -> Artifact:
        if not path.exists():
            return cls(path, None, None)
        return cls(path, path.read_bytes(), path.stat().st_mtime_ns)

    def assert_unchanged(self) -> None:
        now = Artifact.of(self.path)
        assert now.data is not None, f"{self.path} disappeared"
        assert now.data == self.data, f"{self.path} was rewritten by a failing export"
        assert now.mtime_ns == self.mtime_ns, f"{self.path} was touched by a failing export"


def onnx_files(onnx: Path) -> list[Artifact]:
    """The .onnx and the data file it names (`<name>.onnx.<digest>.data`, pipeline/output/onnx_commit.py)."""
    from onnxlens.exporter.onnx_pair import named_data_file

    data = named_data_file(onnx) if onnx.exists() else None
    return [Artifact.of(path) for path in (onnx, data) if path is not None and path.exists()]


def leftover_temp_files(directory: Path) -> list[Path]:
    """Half-written files (or staging directories) an atomic save could leave behind."""
    if not directory.exists():
        return []
    return [p for p in directory.rglob("*")
            if any(".tmp" in part or part.endswith(".part") for part in p.relative_to(directory).parts)]


# --------------------------------------------------------------------------------------------
# The fault model: a tiny Linear whose output width is VERSION (so the .onnx tells which save was
# exported), a helper in another file, and four places to inject a fault.

NET_TEMPLATE = '''\
"""Fault-matrix model. The output width is VERSION, so a test can tell which save was exported."""
import os
import sys
import time

import torch
from torch import nn

from models.helper import activate

VERSION = {version}
IN = {width}
{module_hook}

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(IN, VERSION)

    def forward(self, x):
{forward_hook}
        return activate(self.lin(x))


def build_model():
{factory_hook}
    return Net().eval()


def example_inputs():
{inputs_hook}
    return (torch.randn(2, IN),)
'''

HELPER_TEMPLATE = '''\
"""Helper imported by the fault model."""
import torch


def activate(x):
    return torch.relu(x)
'''


def net_source(version: int, *, width: int = 4, module: str = "", factory: str = "",
               forward: str = "", inputs: str = "") -> str:
    def indent(code: str, spaces: int) -> str:
        if not code:
            return " " * spaces + "pass"
        return "\n".join(" " * spaces + line for line in code.splitlines())

    return NET_TEMPLATE.format(
        version=version, width=width, module_hook=module,
        factory_hook=indent(factory, 4), forward_hook=indent(forward, 8),
        inputs_hook=indent(inputs, 4),
    )


def pyproject(targets: list[dict[str, Any]], **settings: Any) -> str:
    """A pyproject.toml with [tool.onnxlens]; values are written as TOML literals."""
    def literal(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str):
            return json.dumps(value)
        return str(value)

    lines = ['[project]', 'name = "fault-workspace"', 'version = "0"', '', '[tool.onnxlens]']
    lines += [f"{key} = {literal(value)}" for key, value in settings.items()]
    for target in targets:
        lines += ["", "[[tool.onnxlens.target]]"]
        lines += [f"{key} = {literal(value)}" for key, value in target.items()]
    return "\n".join(lines) + "\n"


@dataclass
class FaultWorkspace:
    """A workspace with one target `net` (models/net.py + models/helper.py)."""

    root: Path
    scratch: Path  # outside the workspace: pid files, logs, sentinels
    net: Path
    helper: Path
    config: Path
    out: Path
    versions: Iterator[int]

    @property
    def onnx(self) -> Path:
        return self.out / "net.onnx"

    @property
    def pidfile(self) -> Path:
        return self.scratch / "child.pid"

    def next_version(self) -> int:
        return next(self.versions)


def make_fault_workspace(base: Path, *, settings: dict | None = None,
                         target: dict | None = None, out: str = ".onnxlens") -> FaultWorkspace:
    root = base / "ws"
    scratch = base / "scratch"
    scratch.mkdir(parents=True)
    write(root / "models" / "__init__.py", "")
    write(root / "models" / "helper.py", HELPER_TEMPLATE)
    write(root / "models" / "net.py", net_source(1))
    config = root / "pyproject.toml"
    target_table = {"name": "net", "model": "models/net.py:build_model",
                    "inputs": "models/net.py:example_inputs", **(target or {})}
    write(config, pyproject([target_table], **{"output-dir": out, "verify": False, **(settings or {})}))
    return FaultWorkspace(root=root.resolve(), scratch=scratch.resolve(),
                          net=(root / "models" / "net.py").resolve(),
                          helper=(root / "models" / "helper.py").resolve(),
                          config=config.resolve(), out=(root / out).resolve(),
                          versions=itertools.count(2))


# --------------------------------------------------------------------------------------------
# Processes


def alive(pid: int) -> bool:
    """True if the process exists and is not a zombie. A zombie counts as gone here; the
    shutdown checks reap-check the whole tree separately."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def still_running(procs: set[tuple[int, float]]) -> list[str]:
    """Processes from `procs` (pid, create_time) that still exist (zombies included: an
    unreaped child is a leak too)."""
    left = []
    for pid, created in procs:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created:
                left.append(f"{pid} {proc.status()} {' '.join(proc.cmdline())[:120]}")
        except psutil.NoSuchProcess:
            pass
    return left


def wait_gone(procs: set[tuple[int, float]], timeout: float = EXIT_WAIT) -> list[str]:
    """The processes of `procs` still running after up to `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        left = still_running(procs)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def tree(pid: int) -> set[tuple[int, float]]:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return set()
    found = set()
    for proc in procs:
        try:
            found.add((proc.pid, proc.create_time()))
        except psutil.NoSuchProcess:
            pass
    return found


def kill_tree(procs: set[tuple[int, float]]) -> None:
    """Test hygiene after a failed assertion: do not leave a buggy server's processes around."""
    for pid, created in procs:
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created:
                proc.kill()
        except psutil.NoSuchProcess:
            pass


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def wait_for_pid(path: Path, what: str = "the export job to start", timeout: float = EXPORT_WAIT) -> int:
    """The pid a fault model's code wrote to `path`."""
    return poll_until(lambda: read_pid(path), what, timeout)


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def exported_server(ws: FaultWorkspace) -> RawServer:
    """A raw server on `ws`, initialized, its target exported once (the worker is warm)."""
    server = RawServer(ws.root)
    try:
        server.initialize()
        server.open_and_save(ws.net)
        server.wait_until(lambda: exported(ws.onnx, 1), "the first export")
    except BaseException:
        server.kill()
        raise
    return server


# --------------------------------------------------------------------------------------------
# The LSP session


class Session(Client):
    """One real server on one workspace (`Session.launch(root)`), driven like an editor drives
    it, that remembers every process its tree ever had (`seen`)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[int, float]] = set()

    def activity(self) -> None:
        self.track()

    def track(self) -> set[tuple[int, float]]:
        now = tree(self.server_pid)
        self.seen |= now
        return now

    def worker_processes(self) -> list[psutil.Process]:
        """The export worker: the server's direct children running the zygote (its other
        child, the helper that parses big buffers, server/offload.py, is not one)."""
        found = []
        try:
            for child in psutil.Process(self.server_pid).children(recursive=False):
                try:
                    if "onnxlens.exporter.worker.zygote" in child.cmdline():
                        found.append(child)
                except psutil.NoSuchProcess:
                    pass
        except psutil.NoSuchProcess:
            pass
        return found

    async def leftovers_after_shutdown(self) -> list[str]:
        """LSP shutdown + exit; the processes of the tree still running EXIT_WAIT later."""
        self.track()
        if self.server_alive():
            try:
                await asyncio.wait_for(self.shutdown_session(), REQUEST_WAIT)
            except TimeoutError:
                pass  # the server did not exit: wait_gone reports it with the rest
        return await asyncio.to_thread(wait_gone, self.seen)

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            kill_tree(self.seen)

    async def wait_clean_export(self, onnx: Path, width: int, *watched: Path, timeout: float = EXPORT_WAIT) -> None:
        """Wait until the .onnx holds the save with output width `width` and `watched` files
        have no onnxlens diagnostics: the "next normal save works" half of every row."""
        await self.wait_for(lambda: exported(onnx, width) and not any(self.diagnostics_of(p) for p in watched),
                            f"{onnx.name} exported with width {width} and {[p.name for p in watched]} clean",
                            timeout)


async def good_save_exports(session: Session, ws: FaultWorkspace, *watched: Path) -> None:
    """The "next normal save works" half of every row: a good model with a new output width is
    saved and exported, `ws.net` and `watched` are clean, and every diagnostic is gone."""
    version = ws.next_version()
    session.save(ws.net, net_source(version))
    await session.wait_clean_export(ws.onnx, version, ws.net, *watched)
    await session.wait_for(lambda: not session.all_diagnostics(), "every diagnostic cleared")


# --------------------------------------------------------------------------------------------
# A stand-in editor in a process of its own


def start_stand_in_editor(root: Path, file: Path) -> subprocess.Popen:
    """An editor process that starts the server on `root`, opens and saves `file`, prints the
    server's pid and waits to be killed; it holds the only write end of the server's stdin.

    Run as a module from the repository root (which `python -m` puts on sys.path): nothing
    is added to the environment the server and its worker inherit."""
    return subprocess.Popen([sys.executable, "-m", "tests.support.faults", str(root), str(file)],
                            cwd=REPO, stdout=subprocess.PIPE, text=True)


def _stand_in_editor(root: Path, file: Path) -> None:
    server = RawServer(root)
    server.initialize()
    server.open_and_save(file)
    print(server.proc.pid, flush=True)
    time.sleep(600)


if __name__ == "__main__":
    _stand_in_editor(Path(sys.argv[1]), Path(sys.argv[2]))
