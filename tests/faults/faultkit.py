"""Shared machinery for the fault matrix (issue 6): a real `python -m onnxlens.server` driven over
stdio by pytest-lsp's client, real workspaces on disk, real exports through the real worker.

Nothing here is mocked. The helpers only make the tests short:
* `Session`: one server + one workspace; edits files like an editor does (write to disk,
  didChange, didSave), waits for diagnostics, remembers every process the server tree ever had
  so a test can prove none is left over;
* `RawServer`: a bare JSON-RPC/stdio connection for the rows pytest-lsp's client cannot
  express (garbage bytes on the wire, the editor dying without a word);
* small file-system helpers: artifact snapshots, the model templates, the ONNX "version" marker.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import psutil
from lsprotocol import types
from pytest_lsp.client import (
    DEFAULT_CLIENT_FEATURES,
    LanguageClient,
    client_capabilities,
    register_lsp_features,
)
from pygls.protocol import default_converter

from lsp_data import plain

SERVER_COMMAND = [sys.executable, "-m", "onnxlens.server"]

# Generous bounds for "the server eventually did X": the machine is shared by several helpers'
# test runs, so a tiny export can take seconds. These are waits, not performance assertions.
EXPORT_WAIT = 90.0
EXIT_WAIT = 10.0  # "exits within seconds"

MARK = "# FAULT"  # the line a fault is injected on; tests expect the diagnostic there


# --------------------------------------------------------------------------------------------
# Files


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        # newline="" keeps "\r\n" in CRLF tests as written
        with open(path, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)


def marked_line(text: str | bytes, mark: str = MARK) -> int:
    """1-based number of the (only) line holding `mark`."""
    if isinstance(text, bytes):
        text = text.decode("latin-1")
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines, 1) if mark in line]
    assert len(hits) == 1, f"expected one {mark!r} line, found {hits}"
    return hits[0]


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def uri_path(value: str) -> Path:
    return Path(urllib.parse.unquote(urllib.parse.urlparse(value).path)).resolve()


def onnx_width(path: Path) -> int:
    """The fault models' marker: the width of the output, which each save sets to its VERSION."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    return model.graph.output[0].type.tensor_type.shape.dim[-1].dim_value


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


def leftover_temp_files(directory: Path) -> list[Path]:
    """Half-written files (or staging directories) an atomic save could leave behind."""
    if not directory.exists():
        return []
    return [p for p in directory.rglob("*")
            if any(".tmp" in part or part.endswith(".part") for part in p.relative_to(directory).parts)]


def onnx_files(onnx: Path) -> list[Artifact]:
    """The .onnx and its external-data file (torch saves weights in `<name>.onnx.data`)."""
    return [Artifact.of(path) for path in (onnx, onnx.with_name(onnx.name + ".data"))
            if path.exists()]


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


def config_line(config_text: str, needle: str, occurrence: int = 1) -> int:
    """1-based line of the `occurrence`-th line containing `needle`."""
    hits = [i for i, line in enumerate(config_text.splitlines(), 1) if needle in line]
    return hits[occurrence - 1]


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


# --------------------------------------------------------------------------------------------
# The LSP session


def _recording_client() -> LanguageClient:
    """pytest-lsp's client, plus a history of every publishDiagnostics (to prove a stale result
    was never shown, not only that the last one is right)."""
    client = LanguageClient(converter_factory=default_converter)
    client.diagnostic_history = []  # type: ignore[attr-defined]

    def publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        client.diagnostics[params.uri] = params.diagnostics
        client.diagnostic_history.append((time.monotonic(), params.uri, list(params.diagnostics)))

    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    register_lsp_features(client, features)
    return client


@dataclass
class Session:
    """One real server on one workspace, driven like an editor would drive it."""

    client: LanguageClient
    root: Path
    versions: dict[Path, int] = field(default_factory=dict)
    seen: set[tuple[int, float]] = field(default_factory=set)

    @classmethod
    async def start(cls, root: Path, *, env: dict[str, str] | None = None) -> Session:
        client = _recording_client()
        await client.start_io(*SERVER_COMMAND, cwd=str(root), env={**os.environ, **(env or {})})
        session = cls(client=client, root=root.resolve())
        session.track()
        capabilities = client_capabilities("visual-studio-code")
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=capabilities,
            root_uri=uri(root),
            workspace_folders=[types.WorkspaceFolder(uri=uri(root), name=root.name)],
        )), timeout=60)
        return session

    # processes -------------------------------------------------------------------------------

    @property
    def server_pid(self) -> int:
        return self.client._server.pid  # type: ignore[union-attr]

    def server_alive(self) -> bool:
        return self.client._server is not None and self.client._server.returncode is None

    def track(self) -> set[tuple[int, float]]:
        now = tree(self.server_pid)
        self.seen |= now
        return now

    def worker_processes(self) -> list[psutil.Process]:
        """The server's direct children: the worker (zygote) and nothing else."""
        try:
            return psutil.Process(self.server_pid).children(recursive=False)
        except psutil.NoSuchProcess:
            return []

    async def shutdown(self) -> list[str]:
        """LSP shutdown + exit; returns processes of the tree still running after EXIT_WAIT."""
        self.track()
        if self.server_alive():
            try:
                await asyncio.wait_for(self.client.shutdown_session(), timeout=30)
            except TimeoutError:
                pass  # the server did not exit: wait_gone reports it with the rest
        return await asyncio.to_thread(wait_gone, self.seen)

    async def close(self) -> None:
        if self.server_alive():
            try:
                await asyncio.wait_for(self.client.shutdown_session(), timeout=15)
            except Exception:  # noqa: BLE001 - teardown of a possibly broken server
                self.client._server.kill()  # type: ignore[union-attr]
        try:
            await asyncio.wait_for(self.client.stop(), timeout=15)
        except Exception:  # noqa: BLE001
            pass
        kill_tree(self.seen)

    # editing ---------------------------------------------------------------------------------

    def open(self, path: Path) -> None:
        path = path.resolve()
        self.versions[path] = 1
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri(path), language_id=_language(path), version=1,
                text=path.read_bytes().decode("utf-8", errors="replace"),
            )))

    def save(self, path: Path, text: str | bytes | None = None) -> None:
        """What an editor does on Ctrl+S: the file is written, then didChange (if open) and
        didSave are sent."""
        path = path.resolve()
        if text is not None:
            write(path, text)
        if path in self.versions:
            self.versions[path] += 1
            self.client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(
                    uri=uri(path), version=self.versions[path]),
                content_changes=[types.TextDocumentContentChangeWholeDocument(
                    text=path.read_bytes().decode("utf-8", errors="replace"))],
            ))
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))
        self.track()

    # observing -------------------------------------------------------------------------------

    def diagnostics(self, path: Path) -> list[types.Diagnostic]:
        """The latest onnxlens diagnostics published for `path`."""
        path = path.resolve()
        found: list[types.Diagnostic] = []
        for key, diags in self.client.diagnostics.items():
            if uri_path(key) == path:
                found = [d for d in diags if d.source == "onnxlens"]
        return found

    def all_diagnostics(self) -> dict[Path, list[types.Diagnostic]]:
        out: dict[Path, list[types.Diagnostic]] = {}
        for key, diags in self.client.diagnostics.items():
            mine = [d for d in diags if d.source == "onnxlens"]
            if mine:
                out[uri_path(key)] = mine
        return out

    def describe(self) -> str:
        lines = []
        for path, diags in self.all_diagnostics().items():
            for d in diags:
                lines.append(f"  {path}:{d.range.start.line + 1}:{d.range.start.character + 1} "
                             f"[{d.code}] {d.message[:200]!r}")
        return "\n".join(lines) or "  (no onnxlens diagnostics)"

    async def wait_for(self, predicate: Callable[[], Any], what: str,
                       timeout: float = EXPORT_WAIT) -> Any:
        """Poll `predicate` until it returns something truthy; fail with the current
        diagnostics if it does not within `timeout` or if the server died."""
        async def poll() -> Any:
            while True:
                self.track()
                value = predicate()
                if value:
                    return value
                if not self.server_alive():
                    raise AssertionError(f"the server died while waiting for {what} "
                                         f"(exit code {self.client._server.returncode})")
                await asyncio.sleep(0.1)

        try:
            return await asyncio.wait_for(poll(), timeout)
        except TimeoutError:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                 f"diagnostics now:\n{self.describe()}") from None

    async def wait_diagnostic(self, path: Path, code: str, line: int,
                              timeout: float = EXPORT_WAIT, also: str | None = None
                              ) -> types.Diagnostic:
        """Wait for an onnxlens diagnostic with `code` (or `also`) on 1-based `line` of `path`."""
        def match():
            for d in self.diagnostics(path):
                if d.code in (code, also) and d.range.start.line == line - 1:
                    return d
            return None

        return await self.wait_for(match, f"[{code}] at {path.name}:{line}", timeout)

    async def wait_code_anywhere(self, code: str, timeout: float = EXPORT_WAIT
                                 ) -> tuple[Path, types.Diagnostic]:
        def match():
            for path, diags in self.all_diagnostics().items():
                for d in diags:
                    if d.code == code:
                        return path, d
            return None

        return await self.wait_for(match, f"a [{code}] diagnostic anywhere", timeout)

    async def wait_clean_export(self, onnx: Path, width: int, *watched: Path,
                                timeout: float = EXPORT_WAIT) -> None:
        """Wait until the .onnx holds the save with output width `width` and `watched` files
        have no onnxlens diagnostics: the "next normal save works" half of every row."""
        def done():
            try:
                exported = onnx.exists() and onnx_width(onnx) == width
            except Exception:  # noqa: BLE001 - a file being replaced right now; poll again
                return False
            return exported and not any(self.diagnostics(p) for p in watched)

        await self.wait_for(done, f"{onnx.name} exported with width {width} and "
                                  f"{[p.name for p in watched]} clean", timeout)

    async def stats(self) -> dict[str, Any]:
        """The server's export counters (`onnxlens/stats`, a custom request)."""
        result = await asyncio.wait_for(
            self.client.protocol.send_request_async("onnxlens/stats", {}), 30)
        return plain(result)

    async def wait_idle(self, quiet: float = 1.0, timeout: float = EXPORT_WAIT) -> None:
        """Wait until no export runs and no new trigger arrived for `quiet` seconds, so that a
        snapshot of the outputs is not raced by an export still in flight (e.g. the start-up
        export and the first save's, or a save's watchdog echo)."""
        async def settle() -> None:
            last, since = None, time.monotonic()
            while True:
                data = await self.stats()
                state = (data.get("triggers"), tuple(data.get("running", [])))
                if state != last:
                    last, since = state, time.monotonic()
                elif not state[1] and time.monotonic() - since >= quiet:
                    return
                await asyncio.sleep(0.1)

        try:
            await asyncio.wait_for(settle(), timeout)
        except TimeoutError:
            raise AssertionError(f"the server did not go idle within {timeout:.0f} s") from None

    async def ping(self, path: Path) -> None:
        """One request/response round trip: the server still answers."""
        await asyncio.wait_for(self.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            position=types.Position(line=0, character=0),
        )), timeout=30)
        assert self.server_alive()


def _language(path: Path) -> str:
    return {".py": "python", ".toml": "toml"}.get(path.suffix, "plaintext")


# --------------------------------------------------------------------------------------------
# A bare stdio JSON-RPC connection (no pytest-lsp): for raw bytes and for dying clients.


class RawServer:
    """The server over its stdio pipes, spoken to byte by byte. A reader thread collects every
    message; server-to-client requests (progress tokens, showDocument...) get a null result and
    are kept in `received` so a test can inspect them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.proc = subprocess.Popen(SERVER_COMMAND, cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.received: list[dict[str, Any]] = []
        self._responses: dict[Any, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()

    # wire --------------------------------------------------------------------------------

    def send_bytes(self, data: bytes) -> None:
        with self._write_lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def send(self, message: dict[str, Any] | bytes) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.send_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _read_one(self) -> dict[str, Any] | None:
        length = None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                if length is None:
                    continue
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        return json.loads(self.proc.stdout.read(length))

    def _read_loop(self) -> None:
        while True:
            try:
                message = self._read_one()
            except (ValueError, OSError):
                message = None
            with self._cond:
                if message is None:
                    self._responses["EOF"] = {}
                    self._cond.notify_all()
                    return
                self.received.append(message)
                if "method" in message and "id" in message:
                    try:
                        self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                    except OSError:
                        pass
                elif "method" not in message:
                    self._responses[message.get("id")] = message
                self._cond.notify_all()

    # JSON-RPC ----------------------------------------------------------------------------

    def request(self, method: str, params: Any = None) -> int:
        self._next_id += 1
        message = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def notify(self, method: str, params: Any = None) -> None:
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def response(self, request_id: Any, timeout: float = 30.0) -> dict[str, Any]:
        """The response to `request_id`; AssertionError if none comes (hang or crash)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while request_id not in self._responses:
                if "EOF" in self._responses:
                    raise AssertionError(f"the server closed the connection (exit code "
                                         f"{self.proc.poll()}) before answering {request_id}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no response to request {request_id} in {timeout} s")
                self._cond.wait(left)
            return self._responses.pop(request_id)

    def call(self, method: str, params: Any = None, timeout: float = 30.0) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def initialize(self) -> None:
        reply = self.call("initialize", {
            "processId": os.getpid(), "rootUri": uri(self.root), "capabilities": {
                "window": {"workDoneProgress": True, "showDocument": {"support": True}}},
            "workspaceFolders": [{"uri": uri(self.root), "name": self.root.name}],
        }, timeout=60)
        assert "result" in reply, reply
        self.notify("initialized", {})

    def open_and_save(self, path: Path) -> None:
        text = path.read_bytes().decode("utf-8", errors="replace")
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(path), "languageId": "python", "version": 1, "text": text}})
        self.notify("textDocument/didSave", {"textDocument": {"uri": uri(path)}})

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def sigkill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --------------------------------------------------------------------------------------------
# The standard fault workspace


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
    write(config, pyproject([target_table], **{"output-dir": out, "verify": False,
                                               **(settings or {})}))
    return FaultWorkspace(root=root.resolve(), scratch=scratch.resolve(),
                          net=(root / "models" / "net.py").resolve(),
                          helper=(root / "models" / "helper.py").resolve(),
                          config=config.resolve(), out=(root / out).resolve(),
                          versions=itertools.count(2))
