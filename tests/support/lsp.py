"""The language server under test, as an editor runs it: the real `onnxlens serve` process on
stdio, started in a real workspace, exporting with real torch. Nothing here is mocked.

* `SERVER_COMMAND`: the one way the tests and benchmarks start the server.
* `Client`: pytest-lsp's client (pygls) announcing an editor's recorded capabilities. It also
  records every publishDiagnostics and $/progress in arrival order with its arrival time (to
  prove what came first, or that a stale result was never shown), counts code lens and inlay
  hint refreshes, edits files as an editor does (write the file, didChange if open, didSave;
  or unsaved edits: didChange only), and waits on
  state: diagnostics of a file, exports finished (`onnxlens/stats`), the server idle, the end of
  a progress. Every wait has an explicit timeout, fails with what it saw, and fails at once if
  the server died.
* `RawServer`: a bare JSON-RPC/stdio connection, for what a typed client cannot express
  (garbage bytes on the wire, the client dying without a word) or must not hide (stderr).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Union

import attrs
from lsprotocol import types as lsp
from pygls.protocol import JsonRPCResponseMessage, default_converter
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.support.data import plain
from tests.support.workspace import write

SERVER_COMMAND = [sys.executable, "-I", "-m", "onnxlens.server"]  # as editors start it: isolated (README, "Security")
EXPORT_STATUS = "onnxlens/exportStatus"  # the structured status, for clients that opt in
EDITORS = ["visual-studio-code", "neovim"]  # the recorded capabilities the tests run with

# Bounds for "the server eventually did X": real exports on a machine shared with other test
# runs take seconds (the first in a fresh worker more). Waits, not performance assertions.
EXPORT_WAIT = 120.0
REQUEST_WAIT = 30.0  # one request's answer (or a shutdown)
START_WAIT = 60.0  # start + initialize
POLL = 0.05


def uri(path: Path) -> str:
    return path.resolve().as_uri()


def uri_path(value: str) -> Path:
    return Path(urllib.parse.unquote(urllib.parse.urlparse(value).path)).resolve()


def language(path: Path) -> str:
    return {".py": "python", ".toml": "toml"}.get(path.suffix, "plaintext")


def poll_until(predicate: Callable[[], Any], what: str, timeout: float = EXPORT_WAIT,
               alive: Callable[[], bool] | None = None) -> Any:
    """The blocking wait (no event loop): `predicate`'s first truthy value; AssertionError after
    `timeout`, or at once when `alive` says the process under test is gone."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if alive is not None and not alive():
            raise AssertionError(f"the server exited while waiting for {what}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.1)


@dataclass(frozen=True)
class Event:
    time: float  # time.monotonic() on arrival
    method: str  # textDocument/publishDiagnostics, $/progress or onnxlens/exportStatus
    params: Any


def _converter():
    """pygls' converter, except that a custom request's result stays a dict: pygls turns it into
    namedtuples, renaming every key that is not an identifier (the stats of a target named
    `llama-7b-meta` came back under `_3`)."""
    converter = default_converter()
    converter.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    # A code action with a command object is a CodeAction (a Command's `command` is a string):
    # the default hook reads it as a Command and loses its edit (editor-clients.md).
    converter.register_structure_hook(
        Union[lsp.Command, lsp.CodeAction],
        lambda obj, _: converter.structure(obj, lsp.Command if isinstance(obj.get("command"), str) else lsp.CodeAction))
    return converter


class Client(LanguageClient):
    """One real server, driven like an editor drives it (see the module's docstring)."""

    def __init__(self) -> None:
        super().__init__(converter_factory=_converter)
        self.events: list[Event] = []
        self.lens_refreshes = 0
        self.hint_refreshes = 0
        self.versions: dict[Path, int] = {}  # open documents
        self.folders: tuple[Path, ...] = ()
        self.editor: str | None = None
        self.statuses: list[Any] = []  # onnxlens/exportStatus params, for clients that opt in
        features = dict(DEFAULT_CLIENT_FEATURES)
        for method in (lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, lsp.PROGRESS):
            features[method] = _recording(method, DEFAULT_CLIENT_FEATURES[method])
        features[lsp.WORKSPACE_CODE_LENS_REFRESH] = _count_lens_refresh
        features[lsp.WORKSPACE_INLAY_HINT_REFRESH] = _count_hint_refresh
        features[EXPORT_STATUS] = _record_status
        register_lsp_features(self, features)

    @classmethod
    async def launch(cls, *folders: Path, editor: str | None = "visual-studio-code",
                     settings: dict[str, Any] | None = None, env: dict[str, str] | None = None,
                     experimental: dict[str, Any] | None = None, python: str | None = None):
        """The server started in the first of `folders` (as editors start it) and initialized on
        `folders` with `editor`'s recorded capabilities (None: a client announcing nothing
        optional); `settings` are the `onnxlens` initializationOptions (None: the defaults);
        `experimental` is added as `capabilities.experimental` (the VS Code extension's opt-in
        to `onnxlens/exportStatus`: {"onnxlens": {"exportStatus": True}}); `python`: the
        interpreter that runs SERVER_COMMAND (None: this one)."""
        client = cls()
        client.folders, client.editor = tuple(f.resolve() for f in folders), editor
        command = [python or SERVER_COMMAND[0], *SERVER_COMMAND[1:]]
        await client.start_io(*command, cwd=str(client.root), env={**os.environ, **(env or {})})
        try:
            client.activity()
            await asyncio.wait_for(client.initialize_session(lsp.InitializeParams(
                capabilities=attrs.evolve(client_capabilities(editor) if editor else lsp.ClientCapabilities(),
                                          experimental=experimental),
                root_uri=uri(client.root),
                workspace_folders=[lsp.WorkspaceFolder(uri=uri(f), name=f.name) for f in client.folders],
                initialization_options=None if settings is None else {"onnxlens": settings},
            )), START_WAIT)
        except BaseException:
            await client.close()
            raise
        return client

    @property
    def root(self) -> Path:
        return self.folders[0]

    # processes -------------------------------------------------------------------------------

    @property
    def server_pid(self) -> int:
        return self._server.pid  # type: ignore[union-attr]

    def server_alive(self) -> bool:
        return self._server is not None and self._server.returncode is None

    def activity(self) -> None:
        """Called once the server runs, on every save and on every poll of a wait (a fault
        Session records the server's processes here)."""

    async def close(self) -> None:
        """shutdown + exit if the server still runs, and stop the client. A server still running
        then (it did not obey, or was never initialized) is killed; a failed shutdown is raised
        after the cleanup."""
        failure = None
        if self.server_alive():
            try:
                await asyncio.wait_for(self.shutdown_session(), REQUEST_WAIT)
            except Exception as error:  # noqa: BLE001 - raised below, after the cleanup
                failure = error
        if self.server_alive():
            self._server.kill()  # type: ignore[union-attr]
        try:
            await asyncio.wait_for(self.stop(), 15)
        except Exception:  # noqa: BLE001 - teardown of a server that was killed
            pass
        if failure is not None:
            raise AssertionError(f"the server did not shut down: {failure!r}") from failure

    # editing ---------------------------------------------------------------------------------

    def open(self, path: Path) -> None:
        path = path.resolve()
        self.versions[path] = 1
        self.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
            uri=uri(path), language_id=language(path), version=1,
            text=path.read_bytes().decode("utf-8", errors="replace"))))

    def type(self, path: Path, text: str) -> None:
        """Edits in the editor, not saved: didChange with the buffer's new text (the file on disk
        stays as it was)."""
        path = path.resolve()
        self.versions[path] += 1
        self.text_document_did_change(lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri(path), version=self.versions[path]),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))

    def save(self, path: Path, text: str | bytes | None = None) -> None:
        """What an editor does on Ctrl+S: the file is written, then didChange (if it is open)
        and didSave are sent."""
        path = path.resolve()
        if text is not None:
            write(path, text)
        if path in self.versions:
            self.versions[path] += 1
            self.text_document_did_change(lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri(path), version=self.versions[path]),
                content_changes=[lsp.TextDocumentContentChangeWholeDocument(
                    text=path.read_bytes().decode("utf-8", errors="replace"))]))
        self.text_document_did_save(lsp.DidSaveTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri(path))))
        self.activity()

    # observing -------------------------------------------------------------------------------

    def published(self, path: Path) -> list[lsp.Diagnostic] | None:
        """The last diagnostics (any source) published for `path`; None if none ever were."""
        path = path.resolve()
        found = None
        for key, diagnostics in self.diagnostics.items():
            if uri_path(key) == path:
                found = list(diagnostics)
        return found

    def cleared(self, path: Path) -> bool:
        """An empty diagnostics list was published for `path` (it had some, or was checked)."""
        return self.published(path) == []

    def diagnostics_of(self, path: Path) -> list[lsp.Diagnostic]:
        """The latest onnxlens diagnostics published for `path`."""
        return [d for d in self.published(path) or [] if d.source == "onnxlens"]

    def all_diagnostics(self) -> dict[Path, list[lsp.Diagnostic]]:
        """Every file with onnxlens diagnostics now -> those diagnostics."""
        found = {}
        for key, diagnostics in self.diagnostics.items():
            if mine := [d for d in diagnostics if d.source == "onnxlens"]:
                found[uri_path(key)] = mine
        return found

    def describe(self) -> str:
        lines = [f"  {path}:{d.range.start.line + 1}:{d.range.start.character + 1} [{d.code}] {d.message[:200]!r}"
                 for path, diagnostics in self.all_diagnostics().items() for d in diagnostics]
        return "\n".join(lines) or "  (no onnxlens diagnostics)"

    async def stats(self, timeout: float = REQUEST_WAIT) -> dict[str, Any]:
        """The server's export counters (`onnxlens/stats`, a custom request)."""
        result = await asyncio.wait_for(self.protocol.send_request_async("onnxlens/stats", {}), timeout)
        return plain(result)

    async def ping(self, path: Path) -> None:
        """One request/response round trip: the server still answers."""
        await asyncio.wait_for(self.text_document_hover_async(lsp.HoverParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri(path)), position=lsp.Position(line=0, character=0),
        )), REQUEST_WAIT)
        assert self.server_alive()

    # waits -----------------------------------------------------------------------------------

    async def wait_for(self, predicate: Callable[[], Any], what: str, timeout: float = EXPORT_WAIT) -> Any:
        """`predicate`'s first truthy value (it may be a coroutine function); AssertionError with
        the diagnostics after `timeout`, or at once if the server died."""
        deadline = time.monotonic() + timeout
        while True:
            self.activity()
            value = predicate()
            if inspect.isawaitable(value):
                value = await value
            if value:
                return value
            if not self.server_alive():
                code = self._server.returncode if self._server else None
                raise AssertionError(f"the server died while waiting for {what} (exit code {code})")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; "
                                     f"diagnostics now:\n{self.describe()}")
            await asyncio.sleep(POLL)

    async def wait_stats(self, predicate: Callable[[dict[str, Any]], Any], what: str,
                         timeout: float = EXPORT_WAIT) -> dict[str, Any]:
        """The first `onnxlens/stats` answer `predicate` accepts."""
        async def accepted():
            data = await self.stats()
            return data if predicate(data) else None
        return await self.wait_for(accepted, what, timeout)

    async def exports_finished(self, target: str, at_least: int, timeout: float = EXPORT_WAIT) -> dict[str, Any]:
        """Stats once `target` has `at_least` exports finished (cache hits count)."""
        def enough(data):
            counts = data["per_target"].get(target, {})
            return counts.get("finished", 0) + counts.get("cached", 0) >= at_least
        return await self.wait_stats(enough, f"{at_least} finished exports of {target}", timeout)

    async def wait_idle(self, quiet: float = 1.0, timeout: float = EXPORT_WAIT) -> dict[str, Any]:
        """Stats once no export runs and no trigger arrived and no export started for `quiet`
        seconds, so that what a test looks at next is not raced by an export still in flight
        (the start-up export and the first save's, a save's watchdog echo, a debounced save)."""
        last, since = None, time.monotonic()

        async def settled():
            nonlocal last, since
            data = await self.stats()
            state = (data.get("triggers"), data.get("started"), tuple(data.get("running", [])))
            if state != last:
                last, since = state, time.monotonic()
            elif not state[2] and time.monotonic() - since >= quiet:
                return data
            return None
        return await self.wait_for(settled, f"the server idle for {quiet} s", timeout)

    async def wait_diagnostic(self, path: Path, code: str, line: int, *, also: str | None = None,
                              timeout: float = EXPORT_WAIT) -> lsp.Diagnostic:
        """A final onnxlens diagnostic (not one sent ahead of the export's result: `early`) with
        `code` (or `also`) on 1-based `line` of `path`."""
        def match():
            return next((d for d in self.diagnostics_of(path)
                         if d.code in (code, also) and d.range.start.line == line - 1 and not early(d)), None)
        return await self.wait_for(match, f"[{code}] at {path.name}:{line}", timeout)

    async def wait_code_anywhere(self, code: str, timeout: float = EXPORT_WAIT) -> tuple[Path, lsp.Diagnostic]:
        """A final onnxlens diagnostic with `code` in any file."""
        def match():
            return next(((path, d) for path, diagnostics in self.all_diagnostics().items()
                         for d in diagnostics if d.code == code and not early(d)), None)
        return await self.wait_for(match, f"a [{code}] diagnostic anywhere", timeout)

    async def wait_progress_end(self, token: lsp.ProgressToken, timeout: float = EXPORT_WAIT) -> lsp.WorkDoneProgressEnd:
        def end():
            return next((r for r in self.progress_reports.get(token, []) if isinstance(r, lsp.WorkDoneProgressEnd)), None)
        return await self.wait_for(end, f"the end of progress {token!r}", timeout)


def early(diagnostic: lsp.Diagnostic) -> bool:
    """Sent ahead of its export's result (docs/lsp.md): the result's publish replaces it."""
    return isinstance(diagnostic.data, dict) and diagnostic.data.get("preliminary") is True


def _recording(method: str, default: Callable) -> Callable:
    def handler(client: Client, params: Any):
        client.events.append(Event(time.monotonic(), method, params))
        return default(client, params)
    return handler


def _record_status(client: Client, params: Any) -> None:
    client.statuses.append(plain(params))
    client.events.append(Event(time.monotonic(), EXPORT_STATUS, params))  # with its arrival time


def _count_lens_refresh(client: Client, params: None) -> None:
    client.lens_refreshes += 1


def _count_hint_refresh(client: Client, params: None) -> None:
    client.hint_refreshes += 1


class RawServer:
    """The server over its stdio pipes, spoken to byte by byte. A reader thread collects every
    message; server-to-client requests (progress tokens, showDocument...) get a null result and
    are kept in `received` so a test can inspect them."""

    def __init__(self, root: Path, *, stderr: IO[bytes] | int = subprocess.DEVNULL) -> None:
        self.root = root
        self.proc = subprocess.Popen(SERVER_COMMAND, cwd=root, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=stderr)
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

    def response(self, request_id: Any, timeout: float = REQUEST_WAIT) -> dict[str, Any]:
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

    def call(self, method: str, params: Any = None, timeout: float = REQUEST_WAIT) -> dict[str, Any]:
        return self.response(self.request(method, params), timeout)

    def wait_until(self, predicate: Callable[[], Any], what: str, timeout: float = EXPORT_WAIT) -> Any:
        """`poll_until`, failing at once if the server exits."""
        return poll_until(predicate, what, timeout, alive=lambda: self.proc.poll() is None)

    def wait_notification(self, method: str, matches: Callable[[dict[str, Any]], bool] = lambda params: True,
                          timeout: float = EXPORT_WAIT) -> dict[str, Any]:
        """The params of the first `method` notification received that `matches`."""
        def found():
            with self._cond:
                return next((m["params"] for m in self.received
                             if m.get("method") == method and "id" not in m and matches(m.get("params"))), None)
        return self.wait_until(found, f"a {method} notification", timeout)

    def initialize(self, capabilities: dict[str, Any] | None = None) -> None:
        """initialize + initialized on the root folder (default capabilities: work done
        progress and showDocument, so the server sends its own requests)."""
        if capabilities is None:
            capabilities = {"window": {"workDoneProgress": True, "showDocument": {"support": True}}}
        reply = self.call("initialize", {
            "processId": os.getpid(), "rootUri": uri(self.root), "capabilities": capabilities,
            "workspaceFolders": [{"uri": uri(self.root), "name": self.root.name}],
        }, timeout=START_WAIT)
        assert "result" in reply, reply
        self.notify("initialized", {})

    def open_and_save(self, path: Path) -> None:
        text = path.read_bytes().decode("utf-8", errors="replace")
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri(path), "languageId": language(path), "version": 1, "text": text}})
        self.notify("textDocument/didSave", {"textDocument": {"uri": uri(path)}})

    def shutdown(self, timeout: float = REQUEST_WAIT) -> int:
        """shutdown + exit; the exit code."""
        reply = self.call("shutdown")
        assert "error" not in reply, reply
        self.notify("exit")
        return self.proc.wait(timeout=timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
