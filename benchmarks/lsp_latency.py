"""Save -> diagnostics published, through the LSP, next to the worker's own job time.

    .venv/bin/python -m benchmarks.lsp_latency [--runs 7]     (from the repository root)

A real `python -m onnxlens.server` on a copy of examples/, driven by the tests' recording client
(tests/support/lsp.py, pytest-lsp's client on pygls; needs the test extra). For the mlp
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
import statistics
import tempfile
import time
from pathlib import Path

from lsprotocol import types as lsp

from tests.support.lsp import Client, uri
from tests.support.workspace import copy_examples

TARGETS = {"mlp": "models/mlp.py", "encoder": "models/encoder.py"}


def _finished(data: dict, target: str) -> int:
    counts = data["per_target"].get(target, {})
    return counts.get("finished", 0) + counts.get("cached", 0)


async def run(runs: int) -> list[dict]:
    with tempfile.TemporaryDirectory(prefix="onnxlens-bench-") as scratch:
        return await measure(copy_examples(Path(scratch)), runs)


async def measure(workspace: Path, runs: int) -> list[dict]:
    client = await Client.launch(workspace, editor=None, settings={"debounceMs": 0})
    for target in TARGETS:  # the initial exports (worker warm-up) are not measured
        await client.exports_finished(target, 1)

    def published(uri: str) -> list[float]:
        """Arrival times of the diagnostics published for `uri` (recorded by the client)."""
        return [e.time for e in client.events
                if e.method == lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS and e.params.uri == uri]

    rows = []
    for target, relative in TARGETS.items():
        path = workspace / relative
        file_uri = uri(path)
        lsp_s, service_s, job_s, inside_s = [], [], [], []
        for i in range(runs + 1):  # the first run warms this target's imports in the worker
            before = _finished(await client.stats(), target)
            count = len(published(file_uri))
            path.write_text(path.read_text() + f"\n# benchmark edit {i}\n")
            saved = time.monotonic()  # the clock the client stamps arrivals with
            client.save(path)
            await client.wait_for(lambda: len(published(file_uri)) > count, f"diagnostics of {path.name}")
            arrived = published(file_uri)[count]
            last = (await client.exports_finished(target, before + 1))["last"][target]
            if i == 0:
                continue
            lsp_s.append(arrived - saved)
            service_s.append(last["service_seconds"])
            job_s.append(last["job_seconds"])
            inside_s.append(last["trigger_to_publish_seconds"] - last["debounce_seconds"] - last["service_seconds"])
            await asyncio.sleep(0.3)  # let the watchdog echo of the write pass (it is ignored)
        cancelled = (await client.stats())["per_target"][target]["cancelled"]
        rows.append({"target": target, "runs": runs, "cancelled": cancelled, "lsp": statistics.median(lsp_s),
                     "service": statistics.median(service_s), "job": statistics.median(job_s),
                     "overhead": statistics.median(a - b for a, b in zip(lsp_s, service_s)),
                     "inside": statistics.median(inside_s),
                     "around_job": statistics.median(a - b for a, b in zip(lsp_s, job_s))})
    await client.close()
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
