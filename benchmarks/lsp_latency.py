"""Save -> diagnostics published, through the LSP, next to the worker's own job time.

    .venv/bin/python benchmarks/lsp_latency.py [--runs 7]

A real `python -m onnxlens.server` on a copy of examples/, driven by pygls' client. For the mlp
and the encoder: append a new comment to the model file (new content, so never a cache hit),
send didSave, and time until the server publishes the diagnostics of that file (it does after
every export, clean or not). Debounce is 0 here so the table shows what the server itself adds;
in an editor add the debounce (default 200 ms).

Columns: LSP = save -> publishDiagnostics at the client; service = the server's await of
ExportService.export (fork, job, result over the pipe); job = the pipeline's own time in the
child (ExportResult.seconds). Server overhead = LSP - service (includes both processes' pipes
and the client); "inside the server" is the server's own clock from the last trigger to the
diagnostics written, minus the service's time. LSP - job is everything around the pipeline.
Also prints how many jobs were cancelled: with debounce 0 a watchdog event can catch the file
half-written (truncated) and start a job the complete write then replaces; the debounce exists
for that. The editor's didSave and watchdog's event for the same content never start two jobs.
Prints a markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

REPO = Path(__file__).resolve().parents[1]
TARGETS = {"mlp": "models/mlp.py", "encoder": "models/encoder.py"}


def plain(value):
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


async def stats(client: LanguageClient) -> dict:
    return plain(await client.protocol.send_request_async("onnxlens/stats", {}))


async def finished(client: LanguageClient, target: str) -> int:
    counts = (await stats(client))["per_target"].get(target, {})
    return counts.get("finished", 0) + counts.get("cached", 0)


async def run(runs: int) -> list[dict]:
    workspace = Path(tempfile.mkdtemp(prefix="onnxlens-bench-")) / "examples"
    shutil.copytree(REPO / "examples", workspace, ignore=shutil.ignore_patterns(".onnxlens", "__pycache__"))
    client = LanguageClient("onnxlens-bench", "1")
    published: dict[str, list[float]] = {}

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        published.setdefault(params.uri, []).append(time.perf_counter())

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def on_log(params: lsp.LogMessageParams) -> None:
        pass

    await client.start_io(sys.executable, "-m", "onnxlens.server")
    await client.initialize_async(lsp.InitializeParams(
        process_id=None, capabilities=lsp.ClientCapabilities(), root_uri=workspace.as_uri(),
        workspace_folders=[lsp.WorkspaceFolder(uri=workspace.as_uri(), name="examples")],
        initialization_options={"onnxlens": {"debounceMs": 0}}))
    client.initialized(lsp.InitializedParams())
    for target in TARGETS:  # the initial exports (worker warm-up) are not measured
        while await finished(client, target) < 1:
            await asyncio.sleep(0.1)

    rows = []
    for target, relative in TARGETS.items():
        path = workspace / relative
        uri = path.as_uri()
        lsp_s, service_s, job_s, inside_s = [], [], [], []
        for i in range(runs + 1):  # the first run warms this target's imports in the worker
            before = await finished(client, target)
            count = len(published.get(uri, []))
            path.write_text(path.read_text() + f"\n# benchmark edit {i}\n")
            saved = time.perf_counter()
            client.text_document_did_save(lsp.DidSaveTextDocumentParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri)))
            while len(published.get(uri, [])) <= count:
                await asyncio.sleep(0.001)
            arrived = published[uri][count]
            while await finished(client, target) <= before:
                await asyncio.sleep(0.01)
            last = (await stats(client))["last"][target]
            if i == 0:
                continue
            lsp_s.append(arrived - saved)
            service_s.append(last["service_seconds"])
            job_s.append(last["job_seconds"])
            inside_s.append(last["trigger_to_publish_seconds"] - last["debounce_seconds"] - last["service_seconds"])
            await asyncio.sleep(0.3)  # let the watchdog echo of the write pass (it is ignored)
        cancelled = (await stats(client))["per_target"][target]["cancelled"]
        rows.append({"target": target, "runs": runs, "cancelled": cancelled, "lsp": statistics.median(lsp_s),
                     "service": statistics.median(service_s), "job": statistics.median(job_s),
                     "overhead": statistics.median(a - b for a, b in zip(lsp_s, service_s)),
                     "inside": statistics.median(inside_s),
                     "around_job": statistics.median(a - b for a, b in zip(lsp_s, job_s))})
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    rows = asyncio.run(run(max(5, args.runs)))
    print("| target | runs | save → diagnostics (LSP) | ExportService.export | pipeline job | "
          "server overhead (LSP − service) | of it inside the server | LSP − job |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['target']} | {r['runs']} | {r['lsp'] * 1000:.0f} ms | {r['service'] * 1000:.0f} ms | "
              f"{r['job'] * 1000:.0f} ms | {r['overhead'] * 1000:.1f} ms | {r['inside'] * 1000:.1f} ms | "
              f"{r['around_job'] * 1000:.0f} ms |")
    print("\nmedians; debounce 0 ms (an editor session adds the debounce, default 200 ms); jobs cancelled: "
          + ", ".join(f"{r['target']} {r['cancelled']}" for r in rows))


if __name__ == "__main__":
    main()
