"""A scripted editor session against the onnxlens language server, as an editor would run it.

    .venv/bin/python examples/lsp_demo.py

Copies examples/ to a temporary directory, starts `python -I -m onnxlens.server` on stdio, opens
models/spectral.py, prints the problems as an editor shows them, fixes both files (the two
operators without an ONNX translation become supported ones), saves, and prints how long the
re-export took and that the problems are gone. Uses pygls' own LSP client; no editor needed.

It reads an export's state as the VS Code extension does, from `onnxlens/exportStatus`
(docs/lsp.md): saving two files back to back starts an export and then replaces it with a newer
one (the first is `cancelled`), so only a finished state (`ok`, `failed`) is an outcome, and the
fixed model is done when an export of it ends `ok`.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

EXAMPLES = Path(__file__).resolve().parent
FIXES = {
    "models/spectral.py": ("torch.linalg.eigvals(h).real", "torch.tanh(h)"),
    "models/features.py": ("torch.special.zeta(shifted, 2.0)", "1.0 / (shifted * shifted)"),
}
WAIT_S = 180


class Editor:
    """The little an editor keeps: diagnostics per file, progress messages, the server's log."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.client = LanguageClient("onnxlens-demo", "1")
        self.diagnostics: dict[str, list[lsp.Diagnostic]] = {}
        self.statuses: list[dict] = []  # onnxlens/exportStatus params, in order
        self.changed = asyncio.Event()
        client = self.client

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            self.diagnostics[params.uri] = list(params.diagnostics)
            self.changed.set()

        @client.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_create(params: lsp.WorkDoneProgressCreateParams) -> None:
            return None

        @client.feature(lsp.PROGRESS)
        def on_progress(params: lsp.ProgressParams) -> None:
            return None

        @client.feature("onnxlens/exportStatus")
        def on_status(params) -> None:
            # pygls hands a custom notification's params over as a namedtuple-like object.
            self.statuses.append(params._asdict() if hasattr(params, "_asdict") else dict(params))
            self.changed.set()

        @client.feature(lsp.WINDOW_LOG_MESSAGE)
        def on_log(params: lsp.LogMessageParams) -> None:
            print(f"  [server] {params.message}")

    def finished(self, target: str, since: int = 0) -> list[dict]:
        """The target's finished exports (ok or failed; a cancelled one is no outcome) among
        the statuses received after the first `since`."""
        return [status for status in self.statuses[since:]
                if status.get("target") == target and status.get("state") in ("ok", "failed")]

    def uri(self, relative: str) -> str:
        return (self.workspace / relative).as_uri()

    async def wait_for(self, condition, what: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise SystemExit(f"demo: timed out waiting for {what}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def show_problems(self) -> int:
        count = 0
        for uri, diagnostics in sorted(self.diagnostics.items()):
            path = Path(uri.removeprefix("file://"))
            lines = path.read_text().splitlines() if path.is_file() else []
            for d in diagnostics:
                count += 1
                start, end = d.range.start, d.range.end
                name = path.relative_to(self.workspace) if path.is_relative_to(self.workspace) else path
                severity = lsp.DiagnosticSeverity(d.severity).name.lower()
                print(f"{name}:{start.line + 1}:{start.character + 1}: {severity}[{d.code}] {d.message}")
                if start.line < len(lines):
                    width = max(1, (end.character if end.line == start.line else len(lines[start.line]))
                                - start.character)
                    print(f"    {lines[start.line]}")
                    print(f"    {' ' * start.character}{'^' * width}")
                for related in d.related_information or []:
                    print(f"    note: {Path(related.location.uri.removeprefix('file://')).name}:"
                          f"{related.location.range.start.line + 1}: {related.message}")
        return count


async def main() -> int:
    # A copy of examples/, removed when the demo ends (each run would leave its models behind).
    with tempfile.TemporaryDirectory(prefix="onnxlens-demo-") as scratch:
        return await demo(Path(scratch) / "examples")


async def demo(workspace: Path) -> int:
    shutil.copytree(EXAMPLES, workspace, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__", "lsp_demo.py"))
    editor = Editor(workspace)
    client = editor.client
    print(f"workspace: {workspace} (a copy of examples/, removed when the demo ends)")
    await client.start_io(sys.executable, "-I", "-m", "onnxlens.server")
    started = time.perf_counter()
    await client.initialize_async(lsp.InitializeParams(
        process_id=None, root_uri=workspace.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="examples")],
        capabilities=lsp.ClientCapabilities(
            window=lsp.WindowClientCapabilities(work_done_progress=True),
            experimental={"onnxlens": {"exportStatus": True}},
            text_document=lsp.TextDocumentClientCapabilities(
                publish_diagnostics=lsp.PublishDiagnosticsClientCapabilities(
                    related_information=True, code_description_support=True)))))
    print(f"server process started and answered initialize in {(time.perf_counter() - started) * 1000:.0f} ms")
    client.initialized(lsp.InitializedParams())

    spectral = workspace / "models/spectral.py"
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
        uri=spectral.as_uri(), language_id="python", version=1, text=spectral.read_text())))
    print("\nopened models/spectral.py; waiting for the first export ...")
    await editor.wait_for(lambda: editor.finished("spectral"), "spectral's export")
    print(f"\n--- problems ({editor.finished('spectral')[-1].get('summary', '')}) ---")
    problems = editor.show_problems()

    print("\n--- fixing: eigvals -> tanh (spectral.py), zeta -> 1/x^2 (features.py); saving ---")
    statuses_before = len(editor.statuses)
    saved = time.perf_counter()
    for relative, (old, new) in FIXES.items():
        path = workspace / relative
        path.write_text(path.read_text().replace(old, new))
        client.text_document_did_save(lsp.DidSaveTextDocumentParams(
            text_document=lsp.TextDocumentIdentifier(uri=path.as_uri())))

    # Only an export that read both fixed files ends `ok`: one that started between the saves
    # fails on the operator still in features.py, or is cancelled by the second save.
    def fixed() -> bool:
        return (any(status["state"] == "ok" for status in editor.finished("spectral", statuses_before))
                and not editor.diagnostics.get(editor.uri("models/spectral.py"))
                and not editor.diagnostics.get(editor.uri("models/features.py")))
    await editor.wait_for(fixed, "the re-export after the fix")
    elapsed = time.perf_counter() - saved
    outcome = [status for status in editor.finished("spectral", statuses_before) if status["state"] == "ok"][-1]
    print(f"re-export: {outcome.get('summary', 'ok')} (save -> diagnostics cleared: {elapsed:.2f} s)")
    remaining = editor.show_problems()
    onnx = workspace / ".onnxlens" / "spectral.onnx"
    print(f"problems before: {problems}, after: {remaining}; {onnx.relative_to(workspace)} "
          f"{'written' if onnx.is_file() else 'MISSING'}")

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return 0 if problems and not remaining and onnx.is_file() else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
