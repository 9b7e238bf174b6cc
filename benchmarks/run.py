"""onnxlens benchmarks: `.venv/bin/python benchmarks/run.py [--runs N]` writes benchmarks/RESULTS.md.

For the examples' MLP and 6-layer encoder and a small transformers BERT, in one session:
* cold: a fresh `python` that imports torch and calls torch.onnx.export(dynamo=True) (start ->
  .onnx saved);
* warm stock: torch.onnx.export(dynamo=True) again in a process that already did one;
* onnxlens: a re-export job on the warm worker (ExportService, cache off), request -> result,
  with verification (the default config) and without;
* the limits: torch.export alone, and the onnxlens Pipeline in-process (warm, cached tables);
* cache hit: ExportService.export with the cache on, target unchanged;
* memory: the zygote's RSS, and a child's peak private memory (USS, sampled every 20 ms in runs
  of their own, so sampling does not slow the timed runs).

Every figure is the median of --runs runs (default 5). This process never imports torch: the
in-process figures come from benchmarks/inprocess.py in subprocesses.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from onnxlens.exporter.types import TargetSpec
from onnxlens.server.service.exports import ExportService

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
INPROCESS = HERE / "inprocess.py"

MODELS = [
    {"name": "mlp", "source": REPO / "examples/models/mlp.py",
     "model": "models/mlp.py:MLP", "inputs": "models/mlp.py:example_inputs"},
    {"name": "encoder", "source": REPO / "examples/models/encoder.py",
     "model": "models/encoder.py:build_encoder", "inputs": "models/encoder.py:example_inputs",
     "dynamic_shapes": "models/encoder.py:dynamic_shapes"},
    {"name": "bert", "source": HERE / "models/bert.py",
     "model": "models/bert.py:build_model", "inputs": "models/bert.py:example_inputs"},
]


def _model_json(model: dict) -> str:
    return json.dumps({k: v for k, v in model.items() if k != "source"})


def _workspace() -> Path:
    root = Path(tempfile.mkdtemp(prefix="onnxlens-bench-ws-"))
    (root / "models").mkdir()
    for model in MODELS:
        shutil.copy(model["source"], root / "models" / model["source"].name)
    return root


def _spec(root: Path, model: dict, *, verify: bool) -> TargetSpec:
    return TargetSpec(
        name=model["name"], root=str(root), model=model["model"], inputs=model["inputs"],
        dynamic_shapes=model.get("dynamic_shapes"), verify=verify,
        output=str(root / ".onnxlens" / f"{model['name']}.onnx"),
        report=str(root / ".onnxlens" / "reports" / f"{model['name']}.md"),
    )


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure_cold(root: Path, runs: int) -> dict[str, dict[str, float]]:
    results = {}
    for model in MODELS:
        walls, cpus = [], []
        for run in range(runs):
            out = root / f"cold-{model['name']}-{run}.onnx"
            start, cpu = time.time(), _children_cpu()
            done = subprocess.run([sys.executable, str(INPROCESS), "cold", str(root), _model_json(model), str(out)],
                                  capture_output=True, text=True, check=True)
            walls.append(json.loads(done.stdout.strip().splitlines()[-1])["saved_at"] - start)
            cpus.append(_children_cpu() - cpu)  # the whole process, exit included
        results[model["name"]] = {"wall": statistics.median(walls), "cpu": statistics.median(cpus)}
        print(f"cold {model['name']}: {results[model['name']]}", flush=True)
    return results


def measure_in_process(root: Path, runs: int) -> dict[str, dict[str, float]]:
    models = json.dumps([json.loads(_model_json(m)) for m in MODELS])
    done = subprocess.run([sys.executable, str(INPROCESS), "warm", str(root), models, str(runs)],
                          capture_output=True, text=True, check=True)
    results = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"in-process: {results}", flush=True)
    return results


async def _timed_export(service: ExportService, spec: TargetSpec) -> tuple[float, float]:
    """(wall seconds from request to result, CPU seconds of the job's child)."""
    exits = service.worker.exit_count
    start = time.perf_counter()
    result = await service.export(spec)
    seconds = time.perf_counter() - start
    assert result.status == "ok", result.findings
    while service.worker.exit_count == exits:  # the child's `exited` follows the result
        await asyncio.sleep(0.005)
    return seconds, service.worker.recent_exits[-1].cpu_seconds


async def _peak_child_uss(service: ExportService, spec: TargetSpec) -> int:
    peak = 0
    task = asyncio.create_task(service.export(spec))
    while not task.done():
        for pid in service.worker.child_pids():
            try:
                peak = max(peak, psutil.Process(pid).memory_full_info().uss)
            except psutil.Error:
                pass
        await asyncio.sleep(0.02)
    assert (await task).status == "ok"
    return peak


async def measure_worker(root: Path, runs: int) -> dict[str, object]:
    results: dict[str, object] = {}
    service = ExportService(jobs=1, use_cache=False)
    try:
        start = time.perf_counter()
        await service.start()
        await service.worker.wait_ready()
        results["zygote_start"] = time.perf_counter() - start
        results["zygote_rss"] = psutil.Process(service.worker.pid).memory_info().rss
        for model in MODELS:
            row: dict[str, float] = {}
            for verify in (True, False):
                spec = _spec(root, model, verify=verify)
                # Not timed: the first jobs of a target, until the zygote has preloaded the
                # libraries they imported (transformers, for BERT): it does so before forking
                # the first job that arrives after it reaped one that imported them.
                for _ in range(3):
                    await _timed_export(service, spec)
                times = [await _timed_export(service, spec) for _ in range(runs)]
                key = "onnxlens_verify" if verify else "onnxlens_no_verify"
                row[key] = {"wall": statistics.median(t[0] for t in times),
                            "cpu": statistics.median(t[1] for t in times)}
            row["child_uss"] = statistics.median(
                [await _peak_child_uss(service, _spec(root, model, verify=True)) for _ in range(3)])
            cache = ExportService(use_cache=True)
            spec = _spec(root, model, verify=True)
            assert cache.cached(spec) is not None, "the last export should be in the cache"
            hits = []
            for _ in range(runs):
                start = time.perf_counter()
                hit = await cache.export(spec)
                hits.append(time.perf_counter() - start)
                assert hit.cached
            row["cache_hit"] = statistics.median(hits)
            results[model["name"]] = row
            print(f"onnxlens {model['name']}: {row}", flush=True)
        results["zygote_rss_end"] = psutil.Process(service.worker.pid).memory_info().rss
    finally:
        await service.shutdown()
    return results


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as the results tables give them."""
    return ", ".join(f"{x:.2f}" for x in psutil.getloadavg())


def machine() -> list[str]:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        f"* CPU: {cpu}; {os.cpu_count()} logical cores available",
        f"* RAM: {psutil.virtual_memory().total / 2**30:.1f} GB",
        f"* OS: {platform.platform()}",
        f"* Python {platform.python_version()}; torch {importlib.metadata.version('torch')}, "
        f"onnx {importlib.metadata.version('onnx')}, onnxscript {importlib.metadata.version('onnxscript')}, "
        f"onnxruntime {importlib.metadata.version('onnxruntime')}, "
        f"transformers {importlib.metadata.version('transformers')}",
    ]


def _s(seconds: float) -> str:
    if seconds < 0.01:
        return f"{seconds * 1000:.2f} ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def _x(ratio: float) -> str:
    return f"{ratio:.1f}x"


def report(raw: dict) -> str:
    cold, inproc, worker, runs, seconds = (raw[k] for k in ("cold", "inproc", "worker", "runs", "seconds"))
    names = [m["name"] for m in MODELS]
    lines = [
        "# onnxlens benchmarks",
        "",
        f"Written by `.venv/bin/python benchmarks/run.py --runs {runs}` in {seconds / 60:.1f} min. Every figure is",
        f"the median of {runs} runs, all measured in the same session. Models: the examples' MLP",
        "(64-256-256-10) and 6-layer encoder (dynamic batch), and a randomly initialised transformers",
        "BERT (hidden 128, 2 layers, 2 heads, intermediate 256; eval mode; inputs: ids + mask, 2x16).",
        "",
        "## Machine",
        "",
        *raw["machine"],
        "* load average (1/5/15 min) before: " + " / ".join(f"{x:.1f}" for x in raw["load_before"])
        + ", after: " + " / ".join(f"{x:.1f}" for x in raw["load_after"])
        + " (the machine was shared with other jobs while this ran)",
        "",
        "## Export latency (wall clock)",
        "",
        "onnxlens = one re-export job sent to the warm worker (ExportService, cache off), from the",
        "request to the result: fork, import the user's file fresh, capture, decompose, scan,",
        "translate, check, **verify** (onnxruntime vs torch, as in the default config `verify = true`),",
        "save, report. The stock exporter does not verify by default; the verify-off rows compare",
        "like with like.",
        "",
        "| | MLP | encoder | BERT |",
        "|---|---|---|---|",
    ]

    def row(label: str, values) -> None:
        lines.append(f"| {label} | " + " | ".join(values) + " |")

    def table(kind: str) -> None:
        row("cold: fresh python, import torch, torch.onnx.export, save", [_s(cold[n][kind]) for n in names])
        row("warm stock: torch.onnx.export again in the same process", [_s(inproc[n]["warm_stock"][kind]) for n in names])
        row("**onnxlens re-export, verify on (default)**", [_s(worker[n]["onnxlens_verify"][kind]) for n in names])
        row("onnxlens re-export, verify off", [_s(worker[n]["onnxlens_no_verify"][kind]) for n in names])
        row("limit: Pipeline in-process (warm, cached tables), verify on", [_s(inproc[n]["pipeline_verify"][kind]) for n in names])
        row("limit: Pipeline in-process, verify off", [_s(inproc[n]["pipeline_no_verify"][kind]) for n in names])
        row("limit: torch.export.export alone", [_s(inproc[n]["torch_export"][kind]) for n in names])

    def ratios(kind: str) -> None:
        lines.extend(["", "| | MLP | encoder | BERT |", "|---|---|---|---|"])
        on, off = "onnxlens_verify", "onnxlens_no_verify"
        row("warm stock / onnxlens (verify on)", [_x(inproc[n]["warm_stock"][kind] / worker[n][on][kind]) for n in names])
        row("warm stock / onnxlens (verify off)", [_x(inproc[n]["warm_stock"][kind] / worker[n][off][kind]) for n in names])
        row("cold / onnxlens (verify on)", [_x(cold[n][kind] / worker[n][on][kind]) for n in names])
        row("onnxlens / in-process pipeline (verify on)", [_x(worker[n][on][kind] / inproc[n]["pipeline_verify"][kind]) for n in names])
        row("onnxlens / in-process pipeline (verify off)", [_x(worker[n][off][kind] / inproc[n]["pipeline_no_verify"][kind]) for n in names])

    table("wall")
    row("cache hit (ExportService.export, unchanged target)", [_s(worker[n]["cache_hit"]) for n in names])
    ratios("wall")
    lines += [
        "",
        "## CPU time",
        "",
        "The same runs in CPU seconds (user + system, all threads): for onnxlens the job's child as",
        "the zygote reaped it (os.wait4), in-process the measuring process (time.process_time), cold",
        "the whole process. On a shared, loaded machine these move much less than wall time.",
        "",
        "| | MLP | encoder | BERT |",
        "|---|---|---|---|",
    ]
    table("cpu")
    ratios("cpu")
    lines += [
        "",
        "## Memory",
        "",
        f"* zygote RSS after warm-up: {worker['zygote_rss'] / 2**20:.0f} MB "
        f"(started and warmed up in {worker['zygote_start']:.1f} s); after the three models' jobs "
        f"and their library preloads: {worker['zygote_rss_end'] / 2**20:.0f} MB",
        "* a child's peak private memory (USS, sampled every 20 ms; median of 3 jobs): "
        + ", ".join(f"{n} {worker[n]['child_uss'] / 2**20:.0f} MB" for n in names),
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--from-json", type=Path, help="rewrite the report from a raw.json of an earlier run")
    args = parser.parse_args()
    raw_file = args.output.with_name("raw.json")
    if args.from_json:
        raw = json.loads(args.from_json.read_text())
    else:
        started = time.perf_counter()
        root = _workspace()
        load_before = os.getloadavg()
        try:
            cold = measure_cold(root, args.runs)
            inproc = measure_in_process(root, args.runs)
            worker = asyncio.run(measure_worker(root, args.runs))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        raw = {"cold": cold, "inproc": inproc, "worker": worker, "runs": args.runs,
               "seconds": time.perf_counter() - started, "load_before": load_before,
               "load_after": os.getloadavg(), "machine": machine()}
        raw_file.write_text(json.dumps(raw, indent=1))  # the report can be rewritten from it
    text = report(raw)
    args.output.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
